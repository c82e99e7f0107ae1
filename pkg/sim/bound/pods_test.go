package bound

import (
	"math"
	"testing"
	"time"
)

func TestComputePods(t *testing.T) {
	cpuNode := Shape{Name: "cpu", PricePerHour: 1, Capacity: Amount{CPU: 4, MemoryGiB: 16}}
	gpuNode := Shape{Name: "gpu", PricePerHour: 3, Capacity: Amount{CPU: 8, MemoryGiB: 32, GPUs: 1}}
	two := Shape{Name: "two", PricePerHour: 1, Capacity: Amount{CPU: 2, MemoryGiB: 8}}
	eight := Shape{Name: "eight", PricePerHour: 6, Capacity: Amount{CPU: 8, MemoryGiB: 32}}
	cpuWide := Shape{Name: "cpu-wide", PricePerHour: 1, Capacity: Amount{CPU: 8, MemoryGiB: 2}}
	memWide := Shape{Name: "mem-wide", PricePerHour: 1, Capacity: Amount{CPU: 2, MemoryGiB: 8}}
	for _, c := range []struct {
		name          string
		shapes        []Shape
		classes       []Class
		changes       []PodChange
		end           time.Duration
		cost, fluid   float64
		gpuHours      float64
		unservedNames []string
	}{{
		// A GPU pod (1 cpu) and two cpu pods of 3 cpu that do not tolerate
		// the GPU shape's taint. Fluid: one GPU node brings 8 cpu and
		// covers all 7, $3. Per pod: the GPU node $3 plus 6/4 cpu nodes,
		// $1.5.
		name: "a tainted shape's spare cpu is not free", shapes: []Shape{cpuNode, gpuNode},
		classes: []Class{{Name: "gpu-pod", Pod: Amount{CPU: 1, GPUs: 1}, Shapes: []int{1}},
			{Name: "cpu-pod", Pod: Amount{CPU: 3}, Shapes: []int{0}}},
		changes: []PodChange{{0, 0, 1}, {0, 1, 2}}, end: time.Hour, cost: 4.5, fluid: 3, gpuHours: 1,
	}, {
		// A 4-cpu pod on 2-cpu nodes ($0.5 a core) and 8-cpu nodes ($0.75
		// a core): fluid $2 an hour, but it fits only the big one: $3.
		name: "a pod cannot use a shape smaller than itself", shapes: []Shape{two, eight},
		classes: []Class{{Name: "p", Pod: Amount{CPU: 4}, Shapes: []int{0, 1}}},
		changes: []PodChange{{0, 0, 1}}, end: time.Hour, cost: 3, fluid: 2,
	}, {
		// A pod of 2 cpu and 2 GiB fits a cpu-wide and a memory-wide shape
		// but fills one either way ($1). Fluid packing puts its cpu on the
		// first and its memory on the second: 0.2 of each, $0.4.
		name: "a pod's resources stay on one node", shapes: []Shape{cpuWide, memWide},
		classes: []Class{{Name: "p", Pod: Amount{CPU: 2, MemoryGiB: 2}, Shapes: []int{0, 1}}},
		changes: []PodChange{{0, 0, 1}}, end: time.Hour, cost: 1, fluid: 0.4,
	}, {
		// Two pods of 1 cpu for an hour, then one for an hour, on 2-cpu
		// nodes: one node, then half of one.
		name: "counts change over time", shapes: []Shape{two},
		classes: []Class{{Name: "p", Pod: Amount{CPU: 1}, Shapes: []int{0}}},
		changes: []PodChange{{time.Hour, 0, -1}, {0, 0, 2}}, end: 2 * time.Hour, cost: 1.5, fluid: 1.5,
	}, {
		// A GPU pod with no GPU shape is named and left out, its GPU-hours
		// too; the cpu pod is priced: half a 4-cpu node.
		name: "pods with nowhere to run are named", shapes: []Shape{cpuNode},
		classes: []Class{{Name: "gpu-pod", Pod: Amount{CPU: 1, GPUs: 1}, Shapes: []int{0}},
			{Name: "cpu-pod", Pod: Amount{CPU: 2}, Shapes: []int{0}}},
		changes: []PodChange{{0, 0, 1}, {0, 1, 1}}, end: time.Hour, cost: 0.5, fluid: 0.5,
		unservedNames: []string{"gpu-pod"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ComputePods(c.shapes, c.classes, c.changes, c.end, PodOptions{Solves: -1, Fractional: true})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.Cost-c.cost) > 1e-9 || math.Abs(got.GPUHours-c.gpuHours) > 1e-9 {
				t.Errorf("cost %.6f, GPU-hours %.6f; want %.6f, %.6f", got.Cost, got.GPUHours, c.cost, c.gpuHours)
			}
			if len(got.Unserved) != len(c.unservedNames) || (len(got.Unserved) > 0 && got.Unserved[0] != c.unservedNames[0]) {
				t.Errorf("unserved %v, want %v", got.Unserved, c.unservedNames)
			}
			// The fluid bound of the same demand, as Compute sees it.
			var changes []Change
			for _, ch := range c.changes {
				if len(c.unservedNames) > 0 && c.classes[ch.Class].Name == c.unservedNames[0] {
					continue
				}
				changes = append(changes, Change{ch.At, c.classes[ch.Class].Pod.Scale(float64(ch.Delta))})
			}
			fluid, err := Compute(c.shapes, changes, c.end)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(fluid.Cost-c.fluid) > 1e-9 {
				t.Errorf("fluid bound %.6f, want %.6f", fluid.Cost, c.fluid)
			}
		})
	}
}

// TestComputePodsWithFewSolves checks that reusing the duals of the solved
// demands for the others gives a bound between the fluid one and the exact
// one.
func TestComputePodsWithFewSolves(t *testing.T) {
	shapes := []Shape{
		{Name: "cpu-wide", PricePerHour: 1, Capacity: Amount{CPU: 8, MemoryGiB: 2}},
		{Name: "mem-wide", PricePerHour: 1, Capacity: Amount{CPU: 2, MemoryGiB: 8}},
		{Name: "both", PricePerHour: 2, Capacity: Amount{CPU: 8, MemoryGiB: 8}},
	}
	classes := []Class{
		{Name: "cpu", Pod: Amount{CPU: 2, MemoryGiB: 0.5}, Shapes: []int{0, 1, 2}},
		{Name: "mem", Pod: Amount{CPU: 0.5, MemoryGiB: 2}, Shapes: []int{0, 1, 2}},
		{Name: "even", Pod: Amount{CPU: 2, MemoryGiB: 2}, Shapes: []int{0, 1, 2}},
	}
	// Six hours, each with a different mix; the first lasts longest.
	var changes []PodChange
	mix := [][3]int{{4, 0, 0}, {0, 4, 1}, {3, 3, 0}, {0, 0, 5}, {1, 7, 2}, {6, 1, 1}}
	prev := [3]int{}
	at := time.Duration(0)
	for i, m := range mix {
		for c := range m {
			if d := m[c] - prev[c]; d != 0 {
				changes = append(changes, PodChange{at, c, d})
			}
		}
		prev = m
		at += time.Hour
		if i == 0 {
			at += time.Hour
		}
	}
	end := at
	exact, err := ComputePods(shapes, classes, changes, end, PodOptions{Solves: -1, Fractional: true})
	if err != nil {
		t.Fatal(err)
	}
	one, err := ComputePods(shapes, classes, changes, end, PodOptions{Solves: 1, Fractional: true})
	if err != nil {
		t.Fatal(err)
	}
	var fluidChanges []Change
	for _, ch := range changes {
		fluidChanges = append(fluidChanges, Change{ch.At, classes[ch.Class].Pod.Scale(float64(ch.Delta))})
	}
	fluid, err := Compute(shapes, fluidChanges, end)
	if err != nil {
		t.Fatal(err)
	}
	if one.Cost > exact.Cost+1e-9 || one.Cost < fluid.Cost-1e-9 || exact.Cost <= fluid.Cost+1e-6 {
		t.Errorf("fluid %.4f, one solve %.4f, exact %.4f: want fluid <= one solve <= exact and exact above fluid",
			fluid.Cost, one.Cost, exact.Cost)
	}
}

func TestComputePodsRefusesBadInput(t *testing.T) {
	s := []Shape{{Name: "s", PricePerHour: 1, Capacity: Amount{CPU: 1}}}
	for name, c := range map[string]struct {
		shapes  []Shape
		classes []Class
		changes []PodChange
	}{
		"negative price":     {[]Shape{{Name: "x", PricePerHour: -1, Capacity: Amount{CPU: 1}}}, nil, nil},
		"shape out of range": {s, []Class{{Name: "c", Pod: Amount{CPU: 1}, Shapes: []int{1}}}, nil},
		"class out of range": {s, []Class{{Name: "c", Pod: Amount{CPU: 1}, Shapes: []int{0}}}, []PodChange{{0, 2, 1}}},
		"negative count":     {s, []Class{{Name: "c", Pod: Amount{CPU: 1}, Shapes: []int{0}}}, []PodChange{{0, 0, -1}}},
	} {
		if _, err := ComputePods(c.shapes, c.classes, c.changes, time.Hour, PodOptions{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
