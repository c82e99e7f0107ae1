package bound

import (
	"math"
	"testing"
	"time"
)

var (
	small = Shape{Name: "small", PricePerHour: 1, Capacity: Amount{CPU: 4, MemoryGiB: 16}}
	big   = Shape{Name: "big", PricePerHour: 1.5, Capacity: Amount{CPU: 8, MemoryGiB: 16}}
	gpu   = Shape{Name: "gpu", PricePerHour: 3, Capacity: Amount{CPU: 8, MemoryGiB: 32, GPUs: 1}}
)

func TestCompute(t *testing.T) {
	for _, c := range []struct {
		name     string
		shapes   []Shape
		changes  []Change
		end      time.Duration
		cost     float64
		gpuHours float64
	}{{
		// 6 cpu for an hour: big costs 1.5/8 per core, small 1/4: 0.75 of
		// a big node, $1.125.
		name: "cpu goes to the cheapest per core", shapes: []Shape{small, big},
		changes: []Change{{0, Amount{CPU: 6}}, {time.Hour, Amount{CPU: -6}}}, end: 2 * time.Hour, cost: 1.125,
	}, {
		// Memory binds: 48 GiB and 4 cpu. Big gives 16 GiB for $1.5, small
		// 16 GiB for $1: 3 small nodes, $3 for the hour.
		name: "memory can be the binding resource", shapes: []Shape{small, big},
		changes: []Change{{0, Amount{CPU: 4, MemoryGiB: 48}}}, end: time.Hour, cost: 3,
	}, {
		// 2 GPUs need 2 gpu nodes ($6/h), which bring 16 cpu: the 8 cpu
		// demanded ride along for free. Half an hour: $3, 1 GPU-hour.
		name: "GPUs bring their cpu", shapes: []Shape{small, gpu},
		changes: []Change{{0, Amount{CPU: 8, GPUs: 2}}}, end: 30 * time.Minute, cost: 3, gpuHours: 1,
	}, {
		// Demand steps: 4 cpu for 1h then 8 cpu for 1h on big: 0.5 + 1 nodes.
		name: "demand over time", shapes: []Shape{big},
		changes: []Change{{time.Hour, Amount{CPU: 4}}, {0, Amount{CPU: 4}}}, end: 2 * time.Hour, cost: 0.75 + 1.5,
	}} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Compute(c.shapes, c.changes, c.end)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.Cost-c.cost) > 1e-9 || math.Abs(got.GPUHours-c.gpuHours) > 1e-9 {
				t.Errorf("cost %.6f, GPU-hours %.6f; want %.6f, %.6f", got.Cost, got.GPUHours, c.cost, c.gpuHours)
			}
		})
	}
}

func TestUnservedDemandIsNamed(t *testing.T) {
	got, err := Compute([]Shape{small}, []Change{{0, Amount{CPU: 2, GPUs: 1}}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Unserved) != 1 || got.Unserved[0] != "GPUs" || math.Abs(got.Cost-0.5) > 1e-9 {
		t.Errorf("got %+v, want GPUs unserved and the cpu priced at $0.5", got)
	}
}

func TestNegativePriceIsRefused(t *testing.T) {
	_, err := Compute([]Shape{{Name: "x", PricePerHour: -1, Capacity: Amount{CPU: 1}}}, nil, time.Hour)
	if err == nil {
		t.Fatal("a negative price was accepted")
	}
}
