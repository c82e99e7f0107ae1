package limits_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

func TestHeadroomNamesTheBindingLimit(t *testing.T) {
	node := limits.NodeTotals(builder.Node("n").CPU("8").Memory("32Gi").GPU(4).Label(gpu.LabelGKEAccelerator, "nvidia-l4").Build())
	cur := limits.Totals{}
	cur.Add(node, 3) // 24 cores, 96 GiB, 12 GPUs
	cases := []struct {
		name  string
		l     limits.Limits
		want  int
		limit string
	}{
		{"defaults barely bind", limits.Default(), (320000 - 24) / 8, "cores-total"},
		{"node cap", func() limits.Limits { l := limits.Default(); l.MaxNodesTotal = 5; return l }(), 2, "max-nodes-total"},
		{"memory", func() limits.Limits { l := limits.Default(); l.MemoryGiB.Max = 200; return l }(), 3, "memory-total"},
		{"gpu type", func() limits.Limits {
			l := limits.Default()
			l.GPUs = map[string]limits.Range{"nvidia-l4": {Max: 16}}
			return l
		}(), 1, "gpu-total nvidia-l4"},
		{"already over", func() limits.Limits { l := limits.Default(); l.Cores.Max = 10; return l }(), 0, "cores-total"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, why := tc.l.Headroom(cur, node)
			if n != tc.want || why != tc.limit {
				t.Errorf("Headroom = %d (%s), want %d (%s)", n, why, tc.want, tc.limit)
			}
		})
	}
}

func TestBelowMinimum(t *testing.T) {
	node := limits.NodeTotals(builder.Node("n").CPU("8").Memory("32Gi").Build())
	cur := limits.Totals{}
	cur.Add(node, 2)
	l := limits.Default()
	if below, _ := l.BelowMinimum(cur, node); below {
		t.Error("default minimums blocked a removal")
	}
	l.Cores.Min = 12
	if below, why := l.BelowMinimum(cur, node); !below || why != "cores-total" {
		t.Errorf("BelowMinimum = %v %q, want true cores-total", below, why)
	}
}

func TestParse(t *testing.T) {
	if r, err := limits.ParseRange("cores-total", "4:64"); err != nil || r != (limits.Range{Min: 4, Max: 64}) {
		t.Errorf("ParseRange = %v, %v", r, err)
	}
	for _, bad := range []string{"64", "a:b", "9:3", "-1:3"} {
		if _, err := limits.ParseRange("cores-total", bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseRange(%q) err = %v, want one quoting the value", bad, err)
		}
	}
	typ, r, err := limits.ParseGPUTotal("nvidia-tesla-a100:0:16")
	if err != nil || typ != "nvidia-tesla-a100" || r.Max != 16 {
		t.Errorf("ParseGPUTotal = %q %v %v", typ, r, err)
	}
	if _, _, err := limits.ParseGPUTotal("a100:16"); err == nil {
		t.Error("ParseGPUTotal accepted two fields")
	}
}

// TestNodeTotalsCountWholeAccelerators: --gpu-total bounds devices of every
// accelerator kind, and partitions or replicas of one GPU are one GPU.
func TestNodeTotalsCountWholeAccelerators(t *testing.T) {
	cases := []struct {
		name, typ string
		node      *v1.Node
		want      int64
	}{
		{"MIG slices of one A100", "nvidia-tesla-a100", builder.Node("n").Label(gpu.LabelGKEAccelerator, "nvidia-tesla-a100").
			Allocatable("nvidia.com/mig-1g.5gb", "7").Build(), 1},
		{"GKE time-sharing", "nvidia-l4", builder.Node("n").Label(gpu.LabelGKEAccelerator, "nvidia-l4").
			Label(gpu.LabelGKEMaxSharedClients, "4").GPU(8).Build(), 2},
		{"TPU chips", "tpu-v6e-slice", builder.Node("n").Label(gpu.LabelGKETPUAccelerator, "tpu-v6e-slice").
			Allocatable("google.com/tpu", "4").Build(), 4},
		{"Neuron devices and their cores", "aws-inferentia2", builder.Node("n").Label(gpu.LabelEKSAccelerator, "aws-inferentia2").
			Allocatable("aws.amazon.com/neuron", "12").Allocatable("aws.amazon.com/neuroncore", "24").Build(), 12},
		{"unlabelled AMD GPUs", "amd.com/gpu", builder.Node("n").Allocatable("amd.com/gpu", "8").Build(), 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := limits.NodeTotals(tc.node).GPUsByType
			if len(got) != 1 || got[tc.typ] != tc.want {
				t.Errorf("GPUsByType = %v, want %s: %d", got, tc.typ, tc.want)
			}
		})
	}
}

// TestDRADevicesCount: accelerators published as ResourceSlices count
// against --gpu-total like advertised ones, under the node's type label or
// else the driver's name.
func TestDRADevicesCount(t *testing.T) {
	g := builder.NodeGroup("dra").Template(builder.Node("template-dra").Build()).
		TemplateSlices(builder.NodeSlice("template-dra", "gpu.nvidia.com", builder.Devices("gpu-", 8)...),
			builder.NodeSlice("template-dra", "nic.example.com", builder.Devices("nic-", 4)...)).Build()
	if got := limits.TemplateTotals(&g).GPUsByType; len(got) != 1 || got["gpu.nvidia.com"] != 8 {
		t.Errorf("template totals %v, want gpu.nvidia.com: 8", got)
	}
	s := snapshot.New()
	if err := s.AddNode(builder.Node("n").Label(gpu.LabelGKEAccelerator, "nvidia-h100-80gb").Build()); err != nil {
		t.Fatal(err)
	}
	if err := s.SetResourceSlice(builder.NodeSlice("n", "gpu.nvidia.com", builder.Devices("gpu-", 4)...)); err != nil {
		t.Fatal(err)
	}
	if got := limits.Of(s).GPUsByType; got["nvidia-h100-80gb"] != 4 {
		t.Errorf("cluster totals %v, want nvidia-h100-80gb: 4", got)
	}
}
