package limits_test

import (
	"strings"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/limits"
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
