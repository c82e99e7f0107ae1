// Package limits holds the cluster-wide bounds both halves of the autoscaler
// respect: --max-nodes-total, --cores-total, --memory-total and --gpu-total.
package limits

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpuscale/gpuscale/pkg/dra"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Range is an inclusive [Min, Max] bound.
type Range struct{ Min, Max int64 }

// Unbounded returns a Range that never binds.
func Unbounded() Range { return Range{Min: 0, Max: math.MaxInt64} }

// Limits are the cluster-wide bounds. The zero value binds nothing except
// through its zero ranges, so start from Default().
type Limits struct {
	// MaxNodesTotal caps the node count; 0 means no cap.
	MaxNodesTotal int
	// Cores bounds the sum of node cpu capacity, in whole cores.
	Cores Range
	// MemoryGiB bounds the sum of node memory, in GiB.
	MemoryGiB Range
	// GPUs bounds GPU counts per GPU type (see Type); types not listed are unbounded.
	GPUs map[string]Range
}

// Default is the upstream default: no node cap, 0:320000 cores and
// 0:6400000 GiB of memory, no GPU bounds.
func Default() Limits {
	return Limits{Cores: Range{0, 320000}, MemoryGiB: Range{0, 6400000}}
}

// Totals are what the cluster's nodes add up to.
type Totals struct {
	Nodes      int
	MilliCPU   int64
	Memory     int64 // bytes
	GPUsByType map[string]int64
}

// Type names the accelerator type of a node, as --gpu-total bounds it: the
// accelerator label value where one is set (nvidia-tesla-a100,
// nvidia-a10g, tpu-v6e-slice), otherwise its accelerator resource
// (amd.com/gpu), otherwise "nvidia.com/gpu" (see gpu.Type).
func Type(node *v1.Node) string { return gpu.Type(node) }

// NodeTotals is what one node contributes, from its capacity (allocatable
// where capacity is not set). Accelerators count as whole devices: seven
// MIG slices of one GPU are one GPU, four time-sliced replicas of one GPU
// are one (gpu.Devices).
func NodeTotals(node *v1.Node) Totals {
	rl := node.Status.Capacity
	if len(rl) == 0 {
		rl = node.Status.Allocatable
	}
	t := Totals{Nodes: 1}
	t.MilliCPU = rl.Cpu().MilliValue()
	t.Memory = rl.Memory().Value()
	if n := gpu.Devices(node); n > 0 {
		t.GPUsByType = map[string]int64{Type(node): n}
	}
	return t
}

// NodeTotalsIn is NodeTotals plus the DRA accelerator devices the node
// published in s, counted as whole devices under the node's accelerator
// type (its type label, else the DRA driver's name).
func NodeTotalsIn(s *snapshot.Snapshot, ni *snapshot.NodeInfo) Totals {
	t := NodeTotals(ni.Node)
	if s.HasDRA() {
		addDevices(&t, ni.Node, s.NodeResourceSlices(ni.Name()))
	}
	return t
}

// TemplateTotals is what one new node of the group adds: its template
// node, and the accelerators of its template slices.
func TemplateTotals(g *snapshot.NodeGroup) Totals {
	t := NodeTotals(g.Template)
	addDevices(&t, g.Template, g.TemplateSlices)
	return t
}

func addDevices(t *Totals, node *v1.Node, slices []*resourceapi.ResourceSlice) {
	u := dra.TemplateUsage(slices)
	n := int64(math.Round(u.Offered))
	if n <= 0 {
		return
	}
	typ := Type(node)
	if gpu.Devices(node) == 0 && typ == string(gpu.ResourceName) {
		for _, sl := range slices {
			if gpu.IsAcceleratorDriver(sl.Spec.Driver) {
				typ = sl.Spec.Driver
				break
			}
		}
	}
	if t.GPUsByType == nil {
		t.GPUsByType = map[string]int64{}
	}
	t.GPUsByType[typ] += n
}

// Of sums the nodes of a snapshot.
func Of(s *snapshot.Snapshot) Totals {
	var t Totals
	for _, ni := range s.Nodes() {
		t.Add(NodeTotalsIn(s, ni), 1)
	}
	return t
}

// Add adds n times o to t.
func (t *Totals) Add(o Totals, n int) {
	t.Nodes += o.Nodes * n
	t.MilliCPU += o.MilliCPU * int64(n)
	t.Memory += o.Memory * int64(n)
	for k, v := range o.GPUsByType {
		if t.GPUsByType == nil {
			t.GPUsByType = map[string]int64{}
		}
		t.GPUsByType[k] += v * int64(n)
	}
}

const gib = 1 << 30

// Headroom is how many more nodes shaped like per fit under the maximums
// given the current totals, and the limit that binds first ("" when none).
func (l Limits) Headroom(cur, per Totals) (int, string) {
	best, why := math.MaxInt, ""
	take := func(n int64, name string) {
		if n < 0 {
			n = 0
		}
		if n < int64(best) {
			best, why = int(n), name
		}
	}
	if l.MaxNodesTotal > 0 {
		take(int64(l.MaxNodesTotal-cur.Nodes), "max-nodes-total")
	}
	if per.MilliCPU > 0 && l.Cores.Max < math.MaxInt64/1000 {
		take((l.Cores.Max*1000-cur.MilliCPU)/per.MilliCPU, "cores-total")
	}
	if per.Memory > 0 && l.MemoryGiB.Max < math.MaxInt64/gib {
		take((l.MemoryGiB.Max*gib-cur.Memory)/per.Memory, "memory-total")
	}
	for typ, n := range per.GPUsByType {
		if r, ok := l.GPUs[typ]; ok && n > 0 {
			take((r.Max-cur.GPUsByType[typ])/n, "gpu-total "+typ)
		}
	}
	return best, why
}

// BelowMinimum tells whether removing a node shaped like per would take the
// cluster below a minimum, and which one.
func (l Limits) BelowMinimum(cur, per Totals) (bool, string) {
	if cur.MilliCPU-per.MilliCPU < l.Cores.Min*1000 && per.MilliCPU > 0 {
		return true, "cores-total"
	}
	if cur.Memory-per.Memory < l.MemoryGiB.Min*gib && per.Memory > 0 {
		return true, "memory-total"
	}
	for typ, n := range per.GPUsByType {
		if r, ok := l.GPUs[typ]; ok && n > 0 && cur.GPUsByType[typ]-n < r.Min {
			return true, "gpu-total " + typ
		}
	}
	return false, ""
}

// ParseRange parses "min:max" as the --cores-total and --memory-total flags take it.
func ParseRange(flag, s string) (Range, error) {
	lo, hi, ok := strings.Cut(s, ":")
	if !ok {
		return Range{}, fmt.Errorf("--%s: want min:max, got %q", flag, s)
	}
	return parseBounds(flag, s, lo, hi)
}

// ParseGPUTotal parses one --gpu-total value, "type:min:max".
func ParseGPUTotal(s string) (string, Range, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 || parts[0] == "" {
		return "", Range{}, fmt.Errorf("--gpu-total: want type:min:max, got %q", s)
	}
	r, err := parseBounds("gpu-total", s, parts[1], parts[2])
	return parts[0], r, err
}

func parseBounds(flag, s, lo, hi string) (Range, error) {
	min, err1 := strconv.ParseInt(lo, 10, 64)
	max, err2 := strconv.ParseInt(hi, 10, 64)
	switch {
	case err1 != nil || err2 != nil:
		return Range{}, fmt.Errorf("--%s: min and max must be integers, got %q", flag, s)
	case min < 0 || max < min:
		return Range{}, fmt.Errorf("--%s: want 0 <= min <= max, got %q", flag, s)
	}
	return Range{min, max}, nil
}

// GPUTypes returns the bounded GPU types, sorted.
func (l Limits) GPUTypes() []string {
	out := make([]string, 0, len(l.GPUs))
	for k := range l.GPUs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
