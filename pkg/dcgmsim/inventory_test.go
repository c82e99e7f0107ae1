package dcgmsim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
)

// created sets a pod's creation time, seconds after a fixed instant.
func created(p *corev1.Pod, s int) *corev1.Pod {
	p.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC))
	return p
}

// holders renders an inventory as "node/index=namespace/pod:container" (or
// "-" for a free GPU), one entry per GPU.
func holders(gpus []GPU) string {
	var parts []string
	for _, g := range gpus {
		h := "-"
		if g.Holder != nil {
			h = g.Holder.PodKey() + ":" + g.Holder.Container
		}
		parts = append(parts, fmt.Sprintf("%s/%d=%s", g.Node, g.Index, h))
	}
	return strings.Join(parts, " ")
}

func TestAllocatorAssignsInCreationOrder(t *testing.T) {
	nodes := []*corev1.Node{builder.Node("b").GPU(2).Build(), builder.Node("a").GPU(1).Build(), builder.Node("cpu").Build()}
	pods := []*corev1.Pod{
		created(builder.Pod("late").GPU(1).OnNode("b").Build(), 2),
		created(builder.Pod("early").GPU(1).OnNode("b").Build(), 1),
		created(builder.Pod("on-a").GPU(1).OnNode("a").Build(), 3),
		created(builder.Pod("no-gpu").CPU("1").OnNode("a").Build(), 0),
	}
	got := holders(newAllocator().inventory(nodes, pods))
	want := "a/0=default/on-a:main b/0=default/early:main b/1=default/late:main"
	if got != want {
		t.Errorf("inventory:\n got %s\nwant %s", got, want)
	}
}

func TestAllocatorKeepsAssignmentsWhenOthersLeave(t *testing.T) {
	nodes := []*corev1.Node{builder.Node("n").GPU(3).Build()}
	first := created(builder.Pod("first").GPU(1).OnNode("n").Build(), 1)
	second := created(builder.Pod("second").GPU(1).OnNode("n").Build(), 2)
	a := newAllocator()
	a.inventory(nodes, []*corev1.Pod{first, second})

	// first leaves; second keeps GPU 1; a newcomer takes the lowest free index.
	third := created(builder.Pod("third").GPU(1).OnNode("n").Build(), 3)
	got := holders(a.inventory(nodes, []*corev1.Pod{second, third}))
	want := "n/0=default/third:main n/1=default/second:main n/2=-"
	if got != want {
		t.Errorf("inventory:\n got %s\nwant %s", got, want)
	}
}

func TestAllocatorSkipsPodsThatHoldNoDevice(t *testing.T) {
	nodes := []*corev1.Node{builder.Node("n").GPU(2).Build()}
	done := builder.Pod("done").GPU(1).OnNode("n").Build()
	done.Status.Phase = corev1.PodSucceeded
	failed := builder.Pod("failed").GPU(1).OnNode("n").Build()
	failed.Status.Phase = corev1.PodFailed
	pending := builder.Pod("pending").GPU(1).Build()
	got := holders(newAllocator().inventory(nodes, []*corev1.Pod{done, failed, pending}))
	if want := "n/0=- n/1=-"; got != want {
		t.Errorf("inventory:\n got %s\nwant %s", got, want)
	}
}

func TestAllocatorContainersAndSidecars(t *testing.T) {
	nodes := []*corev1.Node{builder.Node("n").GPU(4).Build()}
	p := builder.Pod("multi").GPU(2).OnNode("n").
		Sidecar(map[corev1.ResourceName]string{builder.GPU: "1"}).
		InitContainer(map[corev1.ResourceName]string{builder.GPU: "1"}). // runs to completion: holds nothing
		Build()
	got := holders(newAllocator().inventory(nodes, []*corev1.Pod{p}))
	want := "n/0=default/multi:sidecar n/1=default/multi:main n/2=default/multi:main n/3=-"
	if got != want {
		t.Errorf("inventory:\n got %s\nwant %s", got, want)
	}
}

func TestAllocatorOverRequestGetsWhatIsLeft(t *testing.T) {
	nodes := []*corev1.Node{builder.Node("n").GPU(1).Build()}
	pods := []*corev1.Pod{
		created(builder.Pod("a").GPU(1).OnNode("n").Build(), 1),
		created(builder.Pod("b").GPU(1).OnNode("n").Build(), 2),
	}
	got := holders(newAllocator().inventory(nodes, pods))
	if want := "n/0=default/a:main"; got != want {
		t.Errorf("inventory:\n got %s\nwant %s", got, want)
	}
}

func TestAllocatorShrinkAndRemovedNode(t *testing.T) {
	a := newAllocator()
	pods := []*corev1.Pod{
		created(builder.Pod("a").GPU(1).OnNode("n").Build(), 1),
		created(builder.Pod("b").GPU(1).OnNode("n").Build(), 2),
	}
	a.inventory([]*corev1.Node{builder.Node("n").GPU(2).Build()}, pods)
	got := holders(a.inventory([]*corev1.Node{builder.Node("n").GPU(1).Build()}, pods))
	if want := "n/0=default/a:main"; got != want {
		t.Errorf("after shrinking to 1 GPU:\n got %s\nwant %s", got, want)
	}
	a.inventory(nil, pods)
	if len(a.slots) != 0 {
		t.Errorf("slots of a removed node kept: %v", a.slots)
	}
}
