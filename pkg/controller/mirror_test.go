package controller

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/pending"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// The mirror, kept in step loop after loop, holds what a snapshot built
// from scratch holds: nodes added, changed, moved between groups and
// removed, pods added, changed, finished and removed with their node.
func TestMirrorMatchesAFreshSnapshot(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	l := newListers(f, false)
	nodes := f.Core().V1().Nodes().Informer().GetIndexer()
	pods := f.Core().V1().Pods().Informer().GetIndexer()
	cp := &groupsProvider{groups: []string{"a", "b"}}
	m := newMirror(pending.Options{})
	check := func(step string) {
		t.Helper()
		if _, err := m.sync(l, cp); err != nil {
			t.Fatal(err)
		}
		fresh, err := newMirror(pending.Options{}).sync(l, cp)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := canonical(m.snap), canonical(fresh.snap); got != want {
			t.Fatalf("%s: mirror\n%s\nfresh\n%s", step, got, want)
		}
	}
	add := func(store interface{ Add(any) error }, obj any) {
		if err := store.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	update := func(store interface{ Update(any) error }, obj any) {
		if err := store.Update(obj); err != nil {
			t.Fatal(err)
		}
	}
	add(nodes, groupNode("n1", "a"))
	add(nodes, groupNode("n2", "a"))
	add(pods, builder.Pod("p1").CPU("1").OnNode("n1").Build())
	add(pods, builder.Pod("p2").CPU("1").OnNode("n2").Build())
	pending := builder.Pod("wait").CPU("1").Build()
	pending.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable}}
	add(pods, pending)
	check("first loop")

	update(nodes, groupNode("n2", "b"))                           // moved to another group
	update(pods, builder.Pod("p1").CPU("2").OnNode("n1").Build()) // changed
	done := builder.Pod("p2").CPU("1").OnNode("n2").Build()       // finished
	done.Status.Phase = v1.PodSucceeded
	update(pods, done)
	add(nodes, groupNode("n3", "")) // unmanaged
	add(pods, builder.Pod("p3").CPU("1").OnNode("n3").Build())
	check("second loop")

	if err := nodes.Delete(groupNode("n3", "")); err != nil { // gone with its pod still listed
		t.Fatal(err)
	}
	cp.groups = []string{"a"} // group b no longer managed
	check("third loop")
	if m.snap.NodeGroup("b") != nil || m.snap.Node("n2").Group != "" {
		t.Errorf("group b still in the snapshot")
	}
}

// canonical writes a snapshot with each node's pods sorted: the order of
// pods on a node depends on when they arrived.
func canonical(s *snapshot.Snapshot) string {
	o := s.Export()
	sort.Slice(o.Pods, func(i, j int) bool {
		return o.Pods[i].Namespace+"/"+o.Pods[i].Name < o.Pods[j].Namespace+"/"+o.Pods[j].Name
	})
	b, _ := json.MarshalIndent(o, "", " ")
	return string(b)
}

// A first sync binds pods by node, then namespace and name, whatever order
// the informer lists them in.
func TestSortByNodeOrdersPodsByNodeNamespaceName(t *testing.T) {
	var pods []*v1.Pod
	for _, n := range []string{"n-b", "n-a", "n-c"} {
		for _, ns := range []string{"zeta", "alpha"} {
			for _, name := range []string{"p2", "p1"} {
				p := builder.Pod(name).Namespace(ns).OnNode(n).Build()
				pods = append(pods, p)
			}
		}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	sortByNode(pods)
	got := make([]string, len(pods))
	for i, p := range pods {
		got[i] = p.Spec.NodeName + "/" + p.Namespace + "/" + p.Name
	}
	if !slices.IsSorted(got) || len(got) != 12 {
		t.Errorf("order %v, want sorted by node, namespace and name", got)
	}
}

// The loop's pending pods: kube-scheduler's once marked, a bypassed
// scheduler's as soon as they wait; other schedulers' pods are left alone
// and counted per scheduler, marked or not.
func TestMirrorPicksPendingPodsByScheduler(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	l := newListers(f, false)
	pods := f.Core().V1().Pods().Informer().GetIndexer()
	marked := []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable}}
	for _, p := range []struct {
		name, scheduler string
		marked          bool
	}{
		{"default-marked", "", true}, {"default-new", "", false},
		{"kai-new", "kai-scheduler", false}, {"kai-marked", "kai-scheduler", true},
		{"volcano-marked", "volcano", true}, {"volcano-new", "volcano", false}, {"yunikorn-new", "yunikorn", false},
	} {
		pod := builder.Pod(p.name).CPU("1").Build()
		pod.Spec.SchedulerName = p.scheduler
		if p.marked {
			pod.Status.Conditions = marked
		}
		if err := pods.Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	v, err := newMirror(pending.Options{BypassedSchedulers: []string{"kai-scheduler"}}).sync(l, &groupsProvider{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range v.pending {
		names = append(names, p.Name)
	}
	if want := []string{"default-marked", "kai-marked", "kai-new"}; !slices.Equal(names, want) {
		t.Errorf("pending %v, want %v", names, want)
	}
	want := []pending.SchedulerPods{{Scheduler: "volcano", Pods: 2}, {Scheduler: "yunikorn", Pods: 1}}
	if !slices.Equal(v.otherSchedulers, want) {
		t.Errorf("left alone %+v, want %+v", v.otherSchedulers, want)
	}
}
