package aws

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/gpu"
)

func build(t *testing.T, instanceType string, tagKV ...string) templateResult {
	t.Helper()
	tags := map[string]string{}
	for i := 0; i+1 < len(tagKV); i += 2 {
		tags[tagKV[i]] = tagKV[i+1]
	}
	res, err := buildTemplate(templateInput{group: "g", instanceType: instanceType, tags: tags}, Prices{})
	if err != nil {
		t.Fatalf("%s: %v", instanceType, err)
	}
	return res
}

// TestAcceleratorTemplates: every accelerator family scales from zero with
// the resources its device plugin advertises and the label that marks its
// nodes before then.
func TestAcceleratorTemplates(t *testing.T) {
	cases := []struct {
		instanceType, label string
		want                map[v1.ResourceName]string
	}{
		{"inf2.48xlarge", AcceleratorInferentia2, map[v1.ResourceName]string{gpu.ResourceNeuron: "12", gpu.ResourceNeuronCore: "24"}},
		{"inf1.6xlarge", AcceleratorInferentia, map[v1.ResourceName]string{gpu.ResourceNeuron: "4", gpu.ResourceNeuronCore: "16"}},
		{"trn1.32xlarge", AcceleratorTrainium, map[v1.ResourceName]string{gpu.ResourceNeuron: "16", gpu.ResourceNeuronCore: "32"}},
		{"trn2.48xlarge", AcceleratorTrainium2, map[v1.ResourceName]string{gpu.ResourceNeuron: "16", gpu.ResourceNeuronCore: "64"}},
		{"g4ad.16xlarge", AcceleratorRadeonV520, map[v1.ResourceName]string{gpu.ResourceAMD: "4"}},
		{"dl1.24xlarge", AcceleratorGaudi, map[v1.ResourceName]string{gpu.ResourceGaudi: "8"}},
		{"p6-b200.48xlarge", AcceleratorB200, map[v1.ResourceName]string{gpu.ResourceName: "8"}},
	}
	for _, tc := range cases {
		n := build(t, tc.instanceType).node
		for name, want := range tc.want {
			wantQuantity(t, n, name, want)
		}
		if n.Labels[gpu.LabelEKSAccelerator] != tc.label || !gpu.IsGPUNode(n) {
			t.Errorf("%s: accelerator label %q, GPU node %v", tc.instanceType, n.Labels[gpu.LabelEKSAccelerator], gpu.IsGPUNode(n))
		}
		if _, ok := n.Status.Allocatable[gpu.ResourceName]; ok && tc.want[gpu.ResourceName] == "" {
			t.Errorf("%s advertises nvidia.com/gpu", tc.instanceType)
		}
	}
}

// TestPartitionedAndSharedGPUTemplates: the labels a group's nodes get
// (node-template label tags) say how their GPUs are advertised.
func TestPartitionedAndSharedGPUTemplates(t *testing.T) {
	mig := build(t, "p4d.24xlarge", TagNodeTemplate+"label/nvidia.com/mig.config", "all-1g.5gb").node
	wantQuantity(t, mig, "nvidia.com/mig-1g.5gb", "56")
	if _, ok := mig.Status.Allocatable[gpu.ResourceName]; ok {
		t.Error("a MIG group still advertises whole GPUs")
	}
	sliced := build(t, "g5.12xlarge", TagNodeTemplate+"label/nvidia.com/gpu.replicas", "4").node
	wantQuantity(t, sliced, gpu.ResourceName, "16")
	// A resources tag still wins over what the labels imply.
	explicit := build(t, "g5.12xlarge", TagNodeTemplate+"label/nvidia.com/gpu.replicas", "4",
		TagNodeTemplate+"resources/nvidia.com/gpu", "8").node
	wantQuantity(t, explicit, gpu.ResourceName, "8")
	_, err := buildTemplate(templateInput{group: "g", instanceType: "g5.xlarge",
		tags: map[string]string{TagNodeTemplate + "label/nvidia.com/gpu.replicas": "many"}}, Prices{})
	if err == nil || !strings.Contains(err.Error(), "label nvidia.com/gpu.replicas") {
		t.Errorf("bad replicas label: err = %v", err)
	}
}

// TestDRAGPUTemplate: a group whose nodes run the NVIDIA DRA driver instead
// of the device plugin scales from zero with its GPUs as ResourceSlices.
func TestDRAGPUTemplate(t *testing.T) {
	res := build(t, "p5.48xlarge", TagNodeTemplate+"label/nvidia.com/gpu.deploy.device-plugin", "false")
	if _, ok := res.node.Status.Allocatable[gpu.ResourceName]; ok {
		t.Error("a DRA group advertises nvidia.com/gpu")
	}
	if len(res.slices) != 1 || len(res.slices[0].Spec.Devices) != 8 || res.slices[0].Spec.Driver != gpu.DriverNVIDIA ||
		*res.slices[0].Spec.NodeName != res.node.Name {
		t.Fatalf("slices %+v", res.slices)
	}
	if got := *res.slices[0].Spec.Devices[0].Attributes["productName"].StringValue; got != "NVIDIA H100 80GB HBM3" {
		t.Errorf("productName %q", got)
	}
	g5 := g5Group()
	g5.Tags = append(g5.Tags, tags("gpu-g5", TagNodeTemplate+"label/nvidia.com/gpu.deploy.device-plugin", "false")...)
	f := standardFake(t, g5)
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	if g := groupByID(t, p.NodeGroups(), "gpu-g5"); len(g.TemplateSlices) != 1 || len(g.TemplateSlices[0].Spec.Devices) != 1 {
		t.Errorf("served group: template slices %v", g.TemplateSlices)
	}
}
