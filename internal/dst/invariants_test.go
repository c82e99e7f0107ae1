package dst

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// Each invariant fails on a history that breaks it and holds on one that
// does not: the checks can fail.
func TestInvariantsCanFail(t *testing.T) {
	at := epoch.Add(10 * time.Minute)
	started := epoch.Add(5 * time.Minute)
	old := strconv.FormatInt(epoch.Add(time.Minute).Unix(), 10)
	fresh := strconv.FormatInt(epoch.Add(6*time.Minute).Unix(), 10)
	startedSecond := strconv.FormatInt(started.Unix(), 10)
	cases := []struct {
		invariant string
		broken    *History
		holds     *History
		want      string
	}{
		{"PodsLeaveOnlyByEvictionOrCompletion",
			&History{Events: []Event{{Kind: EventPodDeletedDirectly, Instance: "a", Object: "w1-0", Result: "ok"}}},
			&History{Events: []Event{{Kind: EventPodEvicted, Object: "default/w1-0", Pods: []PodFact{{Name: "default/w1-0"}}}}},
			"deleted pod w1-0 directly"},
		{"NoUnmovablePodDisrupted",
			&History{Events: []Event{{Kind: EventPodEvicted, Pods: []PodFact{{Name: "default/w1-0", MayNotMove: "do-not-disrupt"}}}}},
			&History{Events: []Event{{Kind: EventPodEvicted, Pods: []PodFact{{Name: "default/w1-0"}}}}},
			"default/w1-0 (do-not-disrupt) was evicted"},
		{"NoUnmovablePodDisrupted",
			&History{Events: []Event{{Kind: EventNodeDeleted, Object: "gpu-1", Pods: []PodFact{{Name: "default/j", MayNotMove: "local storage"}}}}},
			&History{Events: []Event{{Kind: EventNodeDeleted, Object: "gpu-1"}}},
			"node gpu-1 was deleted holding pod default/j (local storage)"},
		{"NoPodLostWithItsNode",
			&History{Events: []Event{{Kind: EventNodeDeleted, Object: "gpu-1", Instance: "a", Pods: []PodFact{{Name: "default/ckpt", Terminating: true}}}}},
			&History{Events: []Event{{Kind: EventNodeDeleted, Object: "gpu-1", Instance: "a"}}},
			"grace period cut short"},
		{"ScaleUpWithinNeed",
			&History{Events: []Event{{Kind: EventScaleUp, Group: "gpu", Delta: 2, Upcoming: 1, Pending: 2}}},
			&History{Events: []Event{{Kind: EventScaleUp, Group: "gpu", Delta: 1, Upcoming: 1, Pending: 2}}},
			"ordered 2 node(s) of gpu with 1 already coming for 2 waiting pod(s)"},
		{"LimitsRespected",
			&History{Events: []Event{{Kind: EventScaleUp, Group: "gpu", InstancesAfter: 7, MaxNodesTotal: 6}}},
			&History{Events: []Event{{Kind: EventScaleUp, Group: "gpu", InstancesAfter: 6, MaxNodesTotal: 6}}},
			"over --max-nodes-total 6"},
		{"LimitsRespected",
			&History{Events: []Event{{Kind: EventScaleUp, Group: "gpu", GPUsAfter: 8, MaxGPUs: 6}}},
			&History{Events: []Event{{Kind: EventScaleUp, Group: "gpu", GPUsAfter: 6, MaxGPUs: 6}}},
			"over --gpu-total max 6"},
		{"NoStaleTaintAfterRestart",
			&History{Obs: []Observation{{At: at, StartedAt: started, Leader: "b", Taints: map[string]string{"gpu-1": old}}}},
			&History{Obs: []Observation{{At: at, StartedAt: started, Leader: "b", Taints: map[string]string{"gpu-1": fresh}}}},
			"node gpu-1 still carries the ToBeDeleted taint"},
		// Put by the predecessor in the second the leader started: the
		// value alone cannot tell, the writer does.
		{"NoStaleTaintAfterRestart",
			&History{Obs: []Observation{{At: at, StartedAt: started, Leader: "b",
				Taints: map[string]string{"gpu-1": startedSecond}, TaintedBy: map[string]string{"gpu-1": "a"}}}},
			&History{Obs: []Observation{{At: at, StartedAt: started, Leader: "b",
				Taints: map[string]string{"gpu-1": startedSecond}, TaintedBy: map[string]string{"gpu-1": "b"}}}},
			"put by a before b started"},
		{"SingleActingLeader",
			&History{Events: []Event{{Kind: EventCloudWrite, Instance: "a", Deposed: true, Verb: "DeleteNodes", Object: "gpu-1", Result: "ok"}}},
			&History{Events: []Event{{Kind: EventCloudWrite, Instance: "b", Verb: "DeleteNodes", Object: "gpu-1", Result: "ok"}}},
			"a called DeleteNodes(gpu-1) after losing the Lease"},
		{"Liveness",
			&History{Obs: []Observation{{FaultsOver: true, Final: true, Unbound: []string{"default/w1-0"}, Idle: []string{"cpu-2"}}}},
			&History{Obs: []Observation{{FaultsOver: true, Final: true}}},
			"default/w1-0 still wait"},
		{"Liveness",
			&History{Obs: []Observation{{FaultsOver: true, Stuck: []string{"cpu-2=1767225600"}}}},
			&History{Obs: []Observation{{FaultsOver: true}}},
			"cpu-2=1767225600 stay marked for deletion"},
	}
	byName := map[string]Invariant{}
	for _, inv := range All() {
		byName[inv.Name] = inv
	}
	for _, c := range cases {
		inv, ok := byName[c.invariant]
		if !ok {
			t.Fatalf("no invariant %s", c.invariant)
		}
		got := inv.Check(c.broken, 0)
		if len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), c.want) {
			t.Errorf("%s on a history that breaks it: %q, want %q", c.invariant, got, c.want)
		}
		if got := inv.Check(c.holds, 0); len(got) != 0 {
			t.Errorf("%s on a history that keeps it: %q", c.invariant, got)
		}
	}
}

// A stale taint is forgiven while the new process has not led for
// staleTaintGrace, and when a fault met a call within that grace (the
// clean-up may have failed on the node and left it to the planner); a
// fault met later does not excuse it.
func TestStaleTaintWaitsForCleanUp(t *testing.T) {
	old := strconv.FormatInt(epoch.Unix(), 10)
	started := epoch.Add(time.Minute)
	cases := []struct {
		name     string
		at, hit  time.Time
		reported bool
	}{
		{"within the grace", started.Add(staleTaintGrace - time.Second), time.Time{}, false},
		{"after the grace", started.Add(staleTaintGrace), time.Time{}, true},
		{"a fault met within the grace", started.Add(90 * time.Second), started.Add(20 * time.Second), false},
		{"a fault met after the grace", started.Add(90 * time.Second), started.Add(staleTaintGrace), true},
	}
	for _, c := range cases {
		h := History{Obs: []Observation{{At: c.at, StartedAt: started, Leader: "b", FaultAfterStart: c.hit,
			Taints: map[string]string{"gpu-1": old}}}}
		if got := NoStaleTaintAfterRestart(&h, 0); (len(got) > 0) != c.reported {
			t.Errorf("%s: got %q, want reported=%v", c.name, got, c.reported)
		}
	}
}

// overdue times how long each key stays seen, and forgets a key once it
// is not: a pod that got a node, or a taint that went, starts over.
func TestOverdueTimesWhatStaysSeen(t *testing.T) {
	since := map[string]time.Time{}
	for _, c := range []struct {
		at   time.Duration
		keys []string
		want string
	}{
		{0, []string{"a", "b"}, ""},
		{2 * time.Minute, []string{"a"}, "a"},
		{3 * time.Minute, []string{"a", "b"}, "a"},
		{4 * time.Minute, []string{"b"}, ""},
		{5 * time.Minute, []string{"a", "b"}, "b"},
	} {
		if got := strings.Join(overdue(since, c.keys, epoch.Add(c.at), time.Minute), ","); got != c.want {
			t.Errorf("at %s seeing %v: overdue %q, want %q", c.at, c.keys, got, c.want)
		}
	}
}
