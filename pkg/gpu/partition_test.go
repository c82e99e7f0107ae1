package gpu_test

import (
	"math"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// TestMIGProfiles checks fractions and instances per GPU against NVIDIA's
// MIG user guide tables (A100 40GB and 80GB, H100 80GB, H200, A30).
func TestMIGProfiles(t *testing.T) {
	cases := []struct {
		profile  string
		memoryGB int
		fraction float64
		perGPU   int
	}{
		{"1g.5gb", 40, 1.0 / 7, 7},
		{"1g.5gb+me", 40, 1.0 / 7, 7},
		{"1g.10gb", 40, 1.0 / 7, 4}, // memory bound on the 40 GB A100
		{"2g.10gb", 40, 2.0 / 7, 3},
		{"3g.20gb", 40, 3.0 / 7, 2},
		{"4g.20gb", 40, 4.0 / 7, 1},
		{"7g.40gb", 40, 1, 1},
		{"1g.10gb", 80, 1.0 / 7, 7}, // the smallest profile of the 80 GB parts
		{"1g.20gb", 80, 1.0 / 7, 4},
		{"3g.40gb", 80, 3.0 / 7, 2},
		{"1g.18gb", 141, 1.0 / 7, 7},
		{"1g.35gb", 141, 1.0 / 7, 4},
		{"1g.6gb", 24, 1.0 / 4, 4},
		{"2g.12gb", 24, 2.0 / 4, 2},
		{"4g.24gb", 24, 1, 1},
		{"1g.6gb", 0, 1.0 / 4, 4}, // A30-only profile, GPU unknown
		{"1g.10gb", 0, 1.0 / 7, 7},
	}
	for _, tc := range cases {
		p, err := gpu.ParseMIGProfile(tc.profile)
		if err != nil {
			t.Fatalf("%s: %v", tc.profile, err)
		}
		if got := p.Fraction(tc.memoryGB); math.Abs(got-tc.fraction) > 1e-9 {
			t.Errorf("%s on %d GB: fraction %v, want %v", tc.profile, tc.memoryGB, got, tc.fraction)
		}
		if got := p.PerGPU(tc.memoryGB); got != tc.perGPU {
			t.Errorf("%s on %d GB: %d per GPU, want %d", tc.profile, tc.memoryGB, got, tc.perGPU)
		}
	}
	for _, bad := range []string{"", "1g", "10gb", "xg.5gb", "8g.80gb", "0g.5gb", "1g.0gb"} {
		if _, err := gpu.ParseMIGProfile(bad); err == nil {
			t.Errorf("ParseMIGProfile(%q) accepted", bad)
		}
	}
	if p, ok := gpu.MIGProfileOf("nvidia.com/mig-2g.10gb"); !ok || p.ComputeSlices != 2 || p.Resource() != "nvidia.com/mig-2g.10gb" {
		t.Errorf("MIGProfileOf = %+v, %v", p, ok)
	}
}

func TestUnits(t *testing.T) {
	cases := []struct {
		name  string
		node  *v1.Node
		pod   map[v1.ResourceName]int64
		units float64 // of the pod
		total float64 // of the node's allocatable
	}{
		{"whole GPUs", builder.Node("n").GPU(8).Build(),
			map[v1.ResourceName]int64{"nvidia.com/gpu": 2}, 2, 8},
		{"MIG slices on an A100 40GB", builder.Node("n").Label(gpu.LabelGPUProduct, "NVIDIA-A100-SXM4-40GB").
			Allocatable("nvidia.com/mig-1g.5gb", "7").Build(),
			map[v1.ResourceName]int64{"nvidia.com/mig-1g.5gb": 1}, 1.0 / 7, 1},
		{"mixed MIG layout", builder.Node("n").Allocatable("nvidia.com/mig-3g.20gb", "1").
			Allocatable("nvidia.com/mig-2g.10gb", "1").Allocatable("nvidia.com/mig-1g.5gb", "2").Build(),
			map[v1.ResourceName]int64{"nvidia.com/mig-3g.20gb": 1}, 3.0 / 7, 1},
		{"GKE partitions advertised as nvidia.com/gpu", builder.Node("n").Label(gpu.LabelGKEAccelerator, "nvidia-tesla-a100").
			Label(gpu.LabelGKEGPUPartitionSize, "1g.5gb").Allocatable("nvidia.com/gpu", "14").Build(),
			map[v1.ResourceName]int64{"nvidia.com/gpu": 1}, 1.0 / 7, 2},
		{"GKE time-sharing", builder.Node("n").Label(gpu.LabelGKEMaxSharedClients, "4").GPU(8).Build(),
			map[v1.ResourceName]int64{"nvidia.com/gpu": 1}, 0.25, 2},
		{"GPU feature discovery replicas", builder.Node("n").Label(gpu.LabelGPUReplicas, "4").
			Allocatable("nvidia.com/gpu.shared", "16").Build(),
			map[v1.ResourceName]int64{"nvidia.com/gpu.shared": 2}, 0.5, 4},
		{"NeuronCores of Inferentia2 devices", builder.Node("n").Allocatable("aws.amazon.com/neuron", "6").
			Allocatable("aws.amazon.com/neuroncore", "12").Build(),
			map[v1.ResourceName]int64{"aws.amazon.com/neuroncore": 1}, 0.5, 6},
		{"TPU chips", builder.Node("n").Allocatable("google.com/tpu", "4").Build(),
			map[v1.ResourceName]int64{"google.com/tpu": 4, "cpu": 1000}, 4, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := gpu.ScaleOf(tc.node)
			if got := sc.Units(tc.pod); math.Abs(got-tc.units) > 1e-9 {
				t.Errorf("pod units %v, want %v", got, tc.units)
			}
			if got := sc.OfferedList(tc.node.Status.Allocatable); math.Abs(got-tc.total) > 1e-9 {
				t.Errorf("node units %v, want %v", got, tc.total)
			}
		})
	}
}

func TestDevices(t *testing.T) {
	cases := []struct {
		node *v1.Node
		want int64
	}{
		{builder.Node("n").GPU(8).Build(), 8},
		{builder.Node("n").Allocatable("nvidia.com/mig-1g.5gb", "7").Build(), 1},
		{builder.Node("n").Allocatable("nvidia.com/mig-1g.5gb", "1").Build(), 1},
		{builder.Node("n").Label(gpu.LabelGKEMaxSharedClients, "3").GPU(6).Build(), 2},
		{builder.Node("n").Allocatable("aws.amazon.com/neuron", "16").Allocatable("aws.amazon.com/neuroncore", "32").Build(), 16},
		{builder.Node("n").Build(), 0},
	}
	for i, tc := range cases {
		if got := gpu.Devices(tc.node); got != tc.want {
			t.Errorf("case %d: Devices = %d, want %d", i, got, tc.want)
		}
	}
}

func TestAdvertisedGPUs(t *testing.T) {
	cases := []struct {
		physical  int64
		partition string
		shared    int64
		memoryGB  int
		want      int64
	}{
		{8, "", 0, 0, 8},
		{1, "1g.5gb", 0, 40, 7},
		{2, "2g.10gb", 0, 40, 6},
		{1, "1g.10gb", 0, 40, 4},
		{2, "", 4, 0, 8},
		{1, "1g.5gb", 2, 40, 14},
	}
	for _, tc := range cases {
		got, err := gpu.AdvertisedGPUs(tc.physical, tc.partition, tc.shared, tc.memoryGB)
		if err != nil || got != tc.want {
			t.Errorf("AdvertisedGPUs(%d, %q, %d) = %d, %v; want %d", tc.physical, tc.partition, tc.shared, got, err, tc.want)
		}
	}
	if _, err := gpu.AdvertisedGPUs(1, "big", 0, 0); err == nil {
		t.Error("a bad partition size was accepted")
	}
}

// TestAwaitingTemplate is the upstream bug where MIG and time-sliced nodes
// are counted unready forever, or ready before their partitions exist: a
// node counts as awaiting exactly while it advertises less than its
// template.
func TestAwaitingTemplate(t *testing.T) {
	migTemplate := builder.Node("t").Allocatable("nvidia.com/mig-1g.10gb", "7").Build()
	sliced := builder.Node("t").Label(gpu.LabelGPUReplicas, "4").GPU(16).Build()
	cases := []struct {
		name     string
		node     *v1.Node
		template *v1.Node
		awaiting bool
		missing  []v1.ResourceName
	}{
		{"device plugin not started", builder.Node("n").Build(), migTemplate, true, []v1.ResourceName{"nvidia.com/mig-1g.10gb"}},
		{"whole GPU before MIG is applied", builder.Node("n").GPU(1).Build(), migTemplate, true, []v1.ResourceName{"nvidia.com/mig-1g.10gb"}},
		{"MIG partitions advertised", builder.Node("n").Allocatable("nvidia.com/mig-1g.10gb", "7").Build(), migTemplate, false, nil},
		{"MIG manager still pending", builder.Node("n").Allocatable("nvidia.com/mig-1g.10gb", "7").
			Label(gpu.LabelMIGConfig, "all-1g.10gb").Label(gpu.LabelMIGConfigState, "pending").Build(), migTemplate, true, nil},
		{"time-slicing replicas not configured", builder.Node("n").GPU(4).Build(), sliced, true, []v1.ResourceName{"nvidia.com/gpu"}},
		{"time-slicing replicas advertised", builder.Node("n").GPU(16).Build(), sliced, false, nil},
		{"cpu template", builder.Node("n").Build(), builder.Node("t").Build(), false, nil},
		{"no template: labels decide", builder.Node("n").Label(gpu.LabelEKSAccelerator, "nvidia-a10g").Build(), nil, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := gpu.AwaitingTemplate(tc.node, tc.template); got != tc.awaiting {
				t.Errorf("AwaitingTemplate = %v, want %v", got, tc.awaiting)
			}
			if tc.template != nil {
				if got := gpu.Missing(tc.node, tc.template); !slices.Equal(got, tc.missing) {
					t.Errorf("Missing = %v, want %v", got, tc.missing)
				}
			}
		})
	}
}

func TestFillFromTemplate(t *testing.T) {
	tmpl := builder.Node("t").Allocatable("nvidia.com/mig-1g.10gb", "7").Build()
	node := builder.Node("n").GPU(1).Build()
	filled := gpu.FillFromTemplate(node, tmpl)
	if !slices.Equal(filled, []v1.ResourceName{"nvidia.com/mig-1g.10gb"}) {
		t.Fatalf("filled %v", filled)
	}
	if q := node.Status.Allocatable["nvidia.com/mig-1g.10gb"]; q.Value() != 7 {
		t.Errorf("allocatable MIG slices %s, want 7", q.String())
	}
	if _, ok := node.Status.Allocatable[gpu.ResourceName]; ok {
		t.Error("the whole GPU the node showed before partitioning is still allocatable")
	}
	if gpu.AwaitingTemplate(node, tmpl) {
		t.Error("a filled node still awaits its template")
	}
	if again := gpu.FillFromTemplate(node, tmpl); again != nil {
		t.Errorf("a second fill changed %v", again)
	}
}

func TestAdvertisedResources(t *testing.T) {
	cases := []struct {
		name   string
		gpus   int64
		labels map[string]string
		memory int
		want   string
	}{
		{"whole GPUs", 8, nil, 80, "nvidia.com/gpu=8"},
		{"MIG manager layout, mixed strategy", 8, map[string]string{gpu.LabelMIGConfig: "all-1g.10gb"}, 80, "nvidia.com/mig-1g.10gb=56"},
		{"MIG manager layout, memory bound", 8, map[string]string{gpu.LabelMIGConfig: "all-1g.10gb"}, 40, "nvidia.com/mig-1g.10gb=32"},
		{"MIG single strategy", 2, map[string]string{gpu.LabelMIGConfig: "all-3g.40gb", gpu.LabelMIGStrategy: "single"}, 80, "nvidia.com/gpu=4"},
		{"MIG disabled", 4, map[string]string{gpu.LabelMIGConfig: "all-disabled"}, 80, "nvidia.com/gpu=4"},
		{"GKE partitions", 1, map[string]string{gpu.LabelGKEGPUPartitionSize: "1g.5gb"}, 40, "nvidia.com/gpu=7"},
		{"GKE time-sharing", 2, map[string]string{gpu.LabelGKEGPUSharingStrategy: "time-sharing", gpu.LabelGKEMaxSharedClients: "3"}, 24, "nvidia.com/gpu=6"},
		{"time-slicing replicas", 4, map[string]string{gpu.LabelGPUReplicas: "4"}, 24, "nvidia.com/gpu=16"},
		{"partitions shared", 1, map[string]string{gpu.LabelGKEGPUPartitionSize: "1g.5gb", gpu.LabelGKEMaxSharedClients: "2"}, 40, "nvidia.com/gpu=14"},
	}
	for _, tc := range cases {
		rl, err := gpu.AdvertisedResources(tc.gpus, tc.labels, tc.memory)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got []string
		for k, q := range rl {
			got = append(got, string(k)+"="+q.String())
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, got, tc.want)
		}
	}
	for _, bad := range []map[string]string{{gpu.LabelGPUReplicas: "zero"}, {gpu.LabelGKEGPUPartitionSize: "big"}, {gpu.LabelMIGConfig: "all-9g.1gb"}} {
		if _, err := gpu.AdvertisedResources(1, bad, 0); err == nil {
			t.Errorf("labels %v accepted", bad)
		}
	}
	if !gpu.UsesDRADriver(map[string]string{gpu.LabelDeployDevicePlugin: "false"}) || gpu.UsesDRADriver(nil) {
		t.Error("UsesDRADriver")
	}
}

// TestScaleOfPlainNodeAllocatesNothing: ScaleOf runs for every node of
// every loop; a node without sharing or partition labels costs no
// allocation (no parse error built for an absent label).
func TestScaleOfPlainNodeAllocatesNothing(t *testing.T) {
	node := builder.Node("n").CPU("32").Memory("128Gi").GPU(4).Label("k8s.amazonaws.com/accelerator", "nvidia-a10g").Build()
	if n := testing.AllocsPerRun(100, func() { _ = gpu.ScaleOf(node) }); n != 0 {
		t.Errorf("ScaleOf allocates %v times per call on a plain GPU node", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = gpu.Devices(node) }); n != 0 {
		t.Errorf("Devices allocates %v times per call on a plain GPU node", n)
	}
}
