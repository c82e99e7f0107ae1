package clusterstate_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func TestScaleUpRequestsCloseOrTimeOut(t *testing.T) {
	s := snapshot.New()
	_ = s.SetNodeGroup(builder.NodeGroup("g").Target(2).Template(builder.Node("t").Build()).Build())
	st := clusterstate.New(clusterstate.DefaultOptions())
	st.RecordScaleUp("g", 2, t0)

	_ = s.AddNodeInGroup(builder.Node("n1").Build(), "g")
	if rec := st.Update(s, t0.Add(10*time.Minute)); len(rec.Shrinks) != 0 {
		t.Fatalf("shrinks before the timeout: %+v", rec.Shrinks)
	}
	if st.Upcoming("g") != 1 {
		t.Fatalf("upcoming = %d, want 1", st.Upcoming("g"))
	}
	rec := st.Update(s, t0.Add(15*time.Minute))
	if len(rec.Shrinks) != 1 || rec.Shrinks[0].Delta != 1 || rec.Shrinks[0].Reason != clusterstate.FailureTimeout {
		t.Fatalf("shrinks = %+v, want one node of g", rec.Shrinks)
	}
	if b, off := st.BackedOff("g", t0.Add(15*time.Minute)); !off || !b.Until.Equal(t0.Add(20*time.Minute)) {
		t.Errorf("backed off %v until %v, want until +20m", off, b.Until)
	}
	if _, off := st.BackedOff("g", t0.Add(20*time.Minute)); off {
		t.Error("still backed off when the backoff ended")
	}

	st.RecordScaleUp("g", 1, t0.Add(30*time.Minute))
	_ = s.AddNodeInGroup(builder.Node("n2").Build(), "g")
	if rec := st.Update(s, t0.Add(50*time.Minute)); len(rec.Shrinks) != 0 {
		t.Errorf("a delivered scale-up timed out: %+v", rec.Shrinks)
	}
}

// Upstream's exponential backoff: failures while a group is already backed
// off (scale-ups failing together) keep the step; only a failure after the
// backoff ended doubles it; none for the reset time starts over.
func TestBackoffSteps(t *testing.T) {
	st := clusterstate.New(clusterstate.DefaultOptions())
	fail := func(at time.Duration) time.Duration {
		st.RecordFailure("g", "Timeout", "", t0.Add(at))
		b, _ := st.BackedOff("g", t0.Add(at))
		return b.Until.Sub(t0.Add(at))
	}
	s := snapshot.New()
	_ = s.SetNodeGroup(builder.NodeGroup("g").Build())
	got := []time.Duration{
		fail(0), fail(0), // two at once: 5m, not 10m
		fail(2 * time.Minute), // still backed off: 5m again
		fail(8 * time.Minute), // after it ended: 10m
		fail(20 * time.Minute), fail(45 * time.Minute), fail(80 * time.Minute),
	}
	want := []time.Duration{5 * time.Minute, 5 * time.Minute, 5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute, 30 * time.Minute}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("backoffs %v, want %v", got, want)
	}
	st.Update(s, t0.Add(80*time.Minute+3*time.Hour+time.Second)) // forgets it
	if d := fail(80*time.Minute + 3*time.Hour + time.Second); d != 5*time.Minute {
		t.Errorf("backoff after the reset time = %v, want 5m", d)
	}
}

// A group whose target exceeds its nodes with no request behind it (after
// a restart) gets a reconstructed request, dated by the oldest unregistered
// instance the cloud lists, or by when the gap was first seen.
func TestRequestsAreReconstructed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		instances []snapshot.Instance
		listed    bool
		wantTime  time.Time
	}{
		{"provider without instances", nil, false, t0},
		{"instances with creation times", []snapshot.Instance{
			{ProviderID: "p://a", CreatedAt: t0.Add(-7 * time.Minute)},
			{ProviderID: "p://b", State: snapshot.InstanceCreating, CreatedAt: t0.Add(-3 * time.Minute)},
		}, true, t0.Add(-7 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot.New()
			_ = s.SetNodeGroup(snapshot.NodeGroup{ID: "g", MaxSize: 5, TargetSize: 2, Instances: tc.instances, InstancesListed: tc.listed})
			st := clusterstate.New(clusterstate.DefaultOptions())
			st.Update(s, t0)
			r, ok := st.Request("g")
			if !ok || !r.Reconstructed || r.Delta != 2 || !r.Time.Equal(tc.wantTime) {
				t.Fatalf("request %+v (found %v), want 2 nodes reconstructed at %v", r, ok, tc.wantTime)
			}
			if st.Upcoming("g") != 2 {
				t.Errorf("upcoming %d, want 2", st.Upcoming("g"))
			}
		})
	}
}

// Instances that never register: counted as upcoming until the removal
// time, then returned for deletion, oldest first, within the minimum size.
func TestUnregisteredInstances(t *testing.T) {
	s := snapshot.New()
	g := snapshot.NodeGroup{ID: "g", MinSize: 2, MaxSize: 5, TargetSize: 4, InstancesListed: true, Instances: []snapshot.Instance{
		{ProviderID: "p://joined"}, {ProviderID: "p://late", CreatedAt: t0.Add(time.Minute)},
		{ProviderID: "p://old", CreatedAt: t0.Add(-time.Minute)}, {ProviderID: "p://older", CreatedAt: t0.Add(-2 * time.Minute)},
		{ProviderID: "p://going", State: snapshot.InstanceDeleting},
	}}
	_ = s.SetNodeGroup(g)
	n := builder.Node("joined").Build()
	n.Spec.ProviderID = "p://joined"
	_ = s.AddNodeInGroup(n, "g")
	st := clusterstate.New(clusterstate.DefaultOptions())
	st.RecordScaleUp("g", 3, t0.Add(-2*time.Minute))
	if rec := st.Update(s, t0.Add(10*time.Minute)); len(rec.Unregistered) != 0 || st.Upcoming("g") != 3 {
		t.Fatalf("at 10m: %+v, upcoming %d; want nothing to delete and 3 upcoming", rec, st.Upcoming("g"))
	}
	rec := st.Update(s, t0.Add(14*time.Minute))
	if len(rec.Unregistered) != 1 || fmt.Sprint(rec.Unregistered[0].ProviderIDs) != "[p://older p://old]" {
		t.Fatalf("at 14m: %+v, want older and old", rec.Unregistered)
	}
	// Two to delete would take the group from 4 to 2, its minimum: both go;
	// the request timed out at 13m and the shrink took nothing (every slot
	// has an instance).
	if len(rec.Shrinks) != 0 || st.Upcoming("g") != 1 || st.Registration("g").Long != 2 {
		t.Errorf("shrinks %+v, upcoming %d, registration %+v; want none, 1 (late), 2 long", rec.Shrinks, st.Upcoming("g"), st.Registration("g"))
	}
}

func TestMinSizeLimitsUnregisteredDeletion(t *testing.T) {
	s := snapshot.New()
	_ = s.SetNodeGroup(snapshot.NodeGroup{ID: "g", MinSize: 2, MaxSize: 5, TargetSize: 3, InstancesListed: true, Instances: []snapshot.Instance{
		{ProviderID: "p://a", CreatedAt: t0}, {ProviderID: "p://b", CreatedAt: t0}, {ProviderID: "p://c", CreatedAt: t0},
	}})
	for _, force := range []bool{false, true} {
		o := clusterstate.DefaultOptions()
		o.ForceDeleteUnregisteredNodes = force
		rec := clusterstate.New(o).Update(s, t0.Add(time.Hour))
		want := 1
		if force {
			want = 3
		}
		if len(rec.Unregistered) != 1 || len(rec.Unregistered[0].ProviderIDs) != want {
			t.Errorf("force=%v: %+v, want %d instance(s)", force, rec.Unregistered, want)
		}
	}
}

func TestAwaitingGPU(t *testing.T) {
	s := snapshot.New()
	_ = s.SetNodeGroup(builder.NodeGroup("gpu").Template(builder.Node("t").GPU(1).Build()).Build())
	_ = s.SetNodeGroup(builder.NodeGroup("cpu").Template(builder.Node("c").Build()).Build())
	add := func(name, group string, gpus int64, age time.Duration) {
		n := builder.Node(name).GPU(gpus).Build()
		n.CreationTimestamp = metav1.NewTime(t0.Add(-age))
		_ = s.AddNodeInGroup(n, group)
	}
	add("fresh", "gpu", 0, 5*time.Minute)
	add("stuck", "gpu", 0, 20*time.Minute)
	add("ready", "gpu", 1, 20*time.Minute)
	add("cpu-node", "cpu", 0, time.Minute)
	starting, overdue := clusterstate.New(clusterstate.DefaultOptions()).Starting(s, t0, nil)
	if len(starting) != 1 || starting[0].Name() != "fresh" || len(overdue) != 1 || overdue[0].Name() != "stuck" {
		t.Errorf("starting %v overdue %v, want [fresh] [stuck]", names(starting), names(overdue))
	}
}

// Start-up taints: the built-in ones, --startup-taint keys and the
// upstream prefixes make a node starting; status taints do not.
func TestStartupTaints(t *testing.T) {
	o := clusterstate.DefaultReadiness()
	o.StartupTaints = []string{"node.cilium.io/agent-not-ready"}
	o.StatusTaints = []string{"example.com/degraded"}
	for key, want := range map[string]bool{
		v1.TaintNodeNotReady:                             true,
		"node.cilium.io/agent-not-ready":                 true,
		clusterstate.StartupTaintPrefix + "gpu-operator": true,
		clusterstate.IgnoreTaintPrefix + "legacy":        true,
		clusterstate.StatusTaintPrefix + "informational": false,
		"example.com/degraded":                           false,
		"nvidia.com/gpu":                                 false,
	} {
		if got := o.IsStartupTaint(key); got != want {
			t.Errorf("IsStartupTaint(%q) = %v, want %v", key, got, want)
		}
	}
	if !o.Ignorable("example.com/degraded") || !o.Ignorable(clusterstate.StatusTaintPrefix+"x") || o.Ignorable("nvidia.com/gpu") {
		t.Error("status taints must be ignorable in simulation, others not")
	}
}

func names(nis []*snapshot.NodeInfo) []string {
	var out []string
	for _, ni := range nis {
		out = append(out, ni.Name())
	}
	return out
}

// A group's own provisioning time (its options) wins over the cluster's:
// its scale-up times out after 5m while the other group's waits 15m.
func TestGroupProvisionTime(t *testing.T) {
	five := 5 * time.Minute
	s := snapshot.New()
	_ = s.SetNodeGroup(snapshot.NodeGroup{ID: "quick", MaxSize: 5, TargetSize: 1, Options: &snapshot.GroupOptions{MaxNodeProvisionTime: &five}})
	_ = s.SetNodeGroup(snapshot.NodeGroup{ID: "plain", MaxSize: 5, TargetSize: 1})
	st := clusterstate.New(clusterstate.DefaultOptions())
	st.RecordScaleUp("quick", 1, t0)
	st.RecordScaleUp("plain", 1, t0)
	st.Update(s, t0)
	if got := st.Deadlines(t0); len(got) != 2 || !got[0].Equal(t0.Add(five)) || !got[1].Equal(t0.Add(15*time.Minute)) {
		t.Errorf("deadlines %v, want +5m and +15m", got)
	}
	rec := st.Update(s, t0.Add(five))
	if len(rec.Shrinks) != 1 || rec.Shrinks[0].Group != "quick" {
		t.Fatalf("shrinks at +5m: %+v, want quick's only", rec.Shrinks)
	}
	if _, off := st.BackedOff("plain", t0.Add(five)); off {
		t.Error("plain backed off at +5m")
	}
}

// TestKnownClassifierAsksOnlyWhatItDoesNotKnow: nodes classified when
// the loop began are answered from what was known; a node added or
// replaced since, a node whose group's template changed and a node of a
// group publishing resource slices are classified again.
func TestKnownClassifierAsksOnlyWhatItDoesNotKnow(t *testing.T) {
	s := snapshot.New()
	tmpl := builder.Node("t").Build()
	dra := snapshot.NodeGroup{ID: "dra", MaxSize: 10, Template: tmpl,
		TemplateSlices: []*resourceapi.ResourceSlice{builder.NodeSlice("t", "gpu.example.com")}}
	for _, err := range []error{
		s.SetNodeGroup(snapshot.NodeGroup{ID: "g", MaxSize: 10, Template: tmpl}), s.SetNodeGroup(dra),
		s.AddNodeInGroup(builder.Node("kept").Build(), "g"), s.AddNodeInGroup(builder.Node("replaced").Build(), "g"),
		s.AddNodeInGroup(builder.Node("sliced").Build(), "dra"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var asked []string
	ask := clusterstate.Classifier(func(ni *snapshot.NodeInfo, _ *snapshot.NodeGroup) clusterstate.NodeState {
		asked = append(asked, ni.Name())
		return clusterstate.NodeReady
	})
	nodes := s.Nodes()
	groups := make([]*snapshot.NodeGroup, len(nodes))
	states := make([]clusterstate.NodeState, len(nodes))
	for i, ni := range nodes {
		groups[i], states[i] = s.NodeGroup(ni.Group), clusterstate.NodeUnready
	}
	c := ask.Known(nodes, groups, states)
	if err := s.UpdateNode(builder.Node("replaced").Label("new", "label").Build(), "g"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddNodeInGroup(builder.Node("added").Build(), "g"); err != nil {
		t.Fatal(err)
	}
	for _, ni := range s.Nodes() {
		want := clusterstate.NodeReady
		if ni.Name() == "kept" {
			want = clusterstate.NodeUnready // as known, not as ask says
		}
		if got := c(ni, s.NodeGroup(ni.Group)); got != want {
			t.Errorf("%s: %v, want %v", ni.Name(), got, want)
		}
	}
	other := *s.NodeGroup("g")
	other.Template = builder.Node("t2").Build()
	if got := c(s.Node("kept"), &other); got != clusterstate.NodeReady {
		t.Errorf("kept, with another template: %v, want it classified again", got)
	}
	want := "added replaced sliced kept"
	if got := strings.Join(asked, " "); got != want {
		t.Errorf("asked about %q, want %q", got, want)
	}
}

// A node this process deleted, that a lagging cache still shows, does not
// stand in for a node of the group on its way; a new node of the same name
// counts again.
func TestDeletedNodeTheCacheStillShowsIsNotRegistered(t *testing.T) {
	s := snapshot.New()
	_ = s.SetNodeGroup(builder.NodeGroup("g").Target(1).Template(builder.Node("t").Build()).Build())
	old := builder.Node("n1").Build()
	old.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	_ = s.AddNodeInGroup(old, "g")
	st := clusterstate.New(clusterstate.DefaultOptions())
	st.Update(s, t0)
	if st.Upcoming("g") != 0 {
		t.Fatalf("upcoming = %d with the one node registered, want 0", st.Upcoming("g"))
	}
	// n1 is removed (the cloud lowers the target to 0), then a scale-up
	// asks for one node; the cache has not yet seen n1 go.
	st.RecordDeletionDone("n1", t0.Add(time.Minute))
	st.RecordScaleUp("g", 1, t0.Add(2*time.Minute))
	st.Update(s, t0.Add(2*time.Minute))
	if st.Upcoming("g") != 1 {
		t.Errorf("upcoming = %d while the cache still shows the deleted n1, want 1", st.Upcoming("g"))
	}
	// A new node of the same name registers: it is the one that came.
	if err := s.RemoveNode("n1"); err != nil {
		t.Fatal(err)
	}
	fresh := builder.Node("n1").Build()
	fresh.CreationTimestamp = metav1.NewTime(t0.Add(3 * time.Minute))
	_ = s.AddNodeInGroup(fresh, "g")
	st.Update(s, t0.Add(4*time.Minute))
	if st.Upcoming("g") != 0 {
		t.Errorf("upcoming = %d once a new n1 registered, want 0", st.Upcoming("g"))
	}
}
