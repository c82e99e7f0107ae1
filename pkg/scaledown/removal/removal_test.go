package removal_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/scaledown/removal"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// cluster has nodes n0..n3 of 4 cpu; n0 and n1 are full, n2 has 1 cpu free
// and n3 has 4.
func cluster(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	s := snapshot.New()
	used := []string{"4", "4", "3", ""}
	for i, u := range used {
		name := "n" + string(rune('0'+i))
		if err := s.AddNode(builder.Node(name).CPU("4").Memory("16Gi").Build()); err != nil {
			t.Fatal(err)
		}
		if u != "" {
			if err := s.AddPod(builder.Pod("fill-" + name).CPU(u).OnNode(name).Build()); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

func pod(name, cpu string) *snapshot.PodInfo {
	p := builder.Pod(name).CPU(cpu).Build()
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: &yes}}
	pi, err := snapshot.NewPodInfo(p)
	if err != nil {
		panic(err)
	}
	return pi
}

func TestFitsAloneAndPlace(t *testing.T) {
	s := cluster(t)
	var sim removal.Simulator
	sim.Start(s)
	defer sim.Release()
	order := sim.AddOrder([]int32{0, 1, 2, 3})
	p := sim.NewPod(pod("a", "2"), order)
	if m, ok := sim.FitsAlone(-1, p); !ok {
		t.Fatalf("a 2-cpu pod fits n3: got %v %v", ok, m)
	}
	if p.Hint() != 3 {
		t.Errorf("hint at %d, want 3: n0 to n2 cannot take a pod of this shape", p.Hint())
	}
	cursor := p.Hint()
	if d, _ := sim.Place(p, &cursor); d != 3 || len(s.Node("n3").Pods) != 1 {
		t.Fatalf("placed on %d, want n3", d)
	}
	// A sibling of the same shape starts at the hint, past the nodes that
	// refused the shape: with n3 gone it fits nowhere.
	sim.SetGone(3, true)
	q := sim.NewPod(pod("b", "2"), order)
	if _, ok := sim.FitsAlone(-1, q); ok {
		t.Fatal("b fits nowhere once n3 is gone")
	}
}

// TestRevisit: with Revisit, a hint jumps over the node being weighed
// (self) and checks it first next time, instead of stopping there.
func TestRevisit(t *testing.T) {
	for _, revisit := range []bool{false, true} {
		s := cluster(t)
		var sim removal.Simulator
		sim.Start(s)
		sim.Revisit = revisit
		order := sim.AddOrder([]int32{0, 1, 2, 3})
		p := sim.NewPod(pod("a", "1"), order)
		// Weighing n2 itself: its pod fits n3.
		if _, ok := sim.FitsAlone(2, p); !ok {
			t.Fatal("a fits n3")
		}
		want := 2 // stops at the unchecked n2
		if revisit {
			want = 3
		}
		if p.Hint() != want {
			t.Errorf("revisit %v: hint at %d, want %d", revisit, p.Hint(), want)
		}
		// Weighing n3: n2, skipped before, is checked and fits.
		sim.SetGone(3, true)
		q := sim.NewPod(pod("b", "1"), order)
		if _, ok := sim.FitsAlone(3, q); !ok {
			t.Errorf("revisit %v: b fits n2, skipped the first time", revisit)
		}
		sim.Release()
	}
}

func TestDropSince(t *testing.T) {
	s := cluster(t)
	var sim removal.Simulator
	sim.Start(s)
	defer sim.Release()
	order := sim.AddOrder([]int32{3})
	mark := sim.Mark()
	pi := pod("a", "1")
	p := sim.NewPod(pi, order)
	if sim.Moved(p.Info()) != p {
		t.Fatal("a moving pod is found by its copy")
	}
	sim.DropSince(mark)
	if sim.Moved(p.Info()) != nil || sim.Mark() != mark {
		t.Error("DropSince kept a pod made after the mark")
	}
}
