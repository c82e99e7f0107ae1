package dcgmsim

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/gpu"
)

func instances(gpus []GPU) string {
	var parts []string
	for _, g := range gpus {
		h := "-"
		if g.Holder != nil {
			h = g.Holder.Pod
		}
		id := "whole"
		if g.MIG != nil {
			id = fmt.Sprintf("%s#%d", g.MIG.Profile, g.MIG.ID)
		}
		parts = append(parts, fmt.Sprintf("%d:%s=%s", g.Index, id, h))
	}
	return strings.Join(parts, " ")
}

// TestMIGInstancesAreDevices: MIG instances of the mixed strategy fill
// their parent GPUs in profile order, and pods asking for a profile get an
// instance of it.
func TestMIGInstancesAreDevices(t *testing.T) {
	n := builder.Node("n").Label(gpu.LabelGPUProduct, "NVIDIA-A100-SXM4-40GB").
		Allocatable("nvidia.com/mig-3g.20gb", "2").Allocatable("nvidia.com/mig-1g.5gb", "3").Build()
	pods := []*corev1.Pod{
		created(builder.Pod("big").Request("nvidia.com/mig-3g.20gb", "1").OnNode("n").Build(), 1),
		created(builder.Pod("small").Request("nvidia.com/mig-1g.5gb", "2").OnNode("n").Build(), 2),
	}
	got := instances(newAllocator().inventory([]*corev1.Node{n}, pods))
	// 1g.5gb sorts first: three sevenths of GPU 0, then the 3g instances:
	// one more on GPU 0 (6/7), one on GPU 1.
	want := "0:1g.5gb#1=small 0:1g.5gb#2=small 0:1g.5gb#3=- 0:3g.20gb#4=big 1:3g.20gb#1=-"
	if got != want {
		t.Errorf("inventory:\n got %s\nwant %s", got, want)
	}
}

func TestGKEPartitionsAreMIGInstances(t *testing.T) {
	n := builder.Node("n").Label(gpu.LabelGKEAccelerator, "nvidia-tesla-a100").Label(gpu.LabelGKEGPUPartitionSize, "2g.10gb").
		Allocatable(gpu.ResourceName, "6").Build()
	p := created(builder.Pod("p").GPU(1).OnNode("n").Build(), 1)
	got := instances(newAllocator().inventory([]*corev1.Node{n}, []*corev1.Pod{p}))
	want := "0:2g.10gb#1=p 0:2g.10gb#2=- 0:2g.10gb#3=- 1:2g.10gb#1=- 1:2g.10gb#2=- 1:2g.10gb#3=-"
	if got != want {
		t.Errorf("inventory:\n got %s\nwant %s", got, want)
	}
}

// TestMIGSeriesCarryTheInstanceLabels: as dcgm-exporter does, a pod on a
// MIG instance is reported with GPU_I_PROFILE and GPU_I_ID, on its parent
// GPU's gpu, UUID and device labels.
func TestMIGSeriesCarryTheInstanceLabels(t *testing.T) {
	pod := created(builder.Pod("infer").Request("nvidia.com/mig-1g.10gb", "1").OnNode("mig").Annotation(AnnotationUtil, "60").Build(), 1)
	pod.Status.Phase = corev1.PodRunning
	client := fake.NewClientset(
		builder.Node("mig").Label(gpu.LabelGPUProduct, "NVIDIA-H100-80GB-HBM3").Allocatable("nvidia.com/mig-1g.10gb", "7").Build(), pod)
	sim, err := New(Options{Client: client, Clock: testingclock.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := sim.Start(ctx); err != nil {
		t.Fatal(err)
	}
	mfs, err := sim.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	held, free := 0, 0
	for _, mf := range mfs {
		if mf.GetName() != "DCGM_FI_DEV_GPU_UTIL" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["GPU_I_PROFILE"] != "1g.10gb" || l["GPU_I_ID"] == "" || l["gpu"] != "0" || l["modelName"] != "NVIDIA H100 80GB HBM3" {
				t.Errorf("series labels %v", l)
			}
			if l["pod"] == "infer" {
				held++
				if m.GetGauge().GetValue() != 60 || l["GPU_I_ID"] != "1" {
					t.Errorf("held instance: util %v, id %s", m.GetGauge().GetValue(), l["GPU_I_ID"])
				}
			} else {
				free++
			}
		}
	}
	if held != 1 || free != 6 {
		t.Errorf("%d held and %d free instance series, want 1 and 6", held, free)
	}
}
