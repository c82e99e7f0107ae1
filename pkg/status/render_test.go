package status_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/status"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func sample() status.Status {
	return status.Status{
		Time: t0,
		Cluster: status.Cluster{
			Health:            status.Health{Safe: true},
			Nodes:             status.NodeCounts{Registered: 4, Ready: 2, NotStarted: 1, AwaitingDevices: 1, Unready: 1, DevicesOverdue: 1, Unregistered: 2, LongUnregistered: 1, BeingDeleted: 1},
			ScaleUpInProgress: true,
			ScaleDown:         status.ScaleDown{Candidates: 1, CooldownUntil: t0.Add(5 * time.Minute), CooldownReason: "--scale-down-delay-after-add"},
		},
		NodeGroups: []status.NodeGroup{
			{ID: "cpu", Min: 1, Max: 10, Target: 2, Nodes: status.NodeCounts{Registered: 2, Ready: 2}, ScaleUp: status.Activity{State: status.ActivityNone}, Candidates: 1},
			{ID: "gpu", Min: 0, Max: 4, Target: 4, Nodes: status.NodeCounts{Registered: 2, NotStarted: 1, AwaitingDevices: 1, Unready: 1, DevicesOverdue: 1, Unregistered: 2, LongUnregistered: 1},
				ScaleUp:      status.Activity{State: status.ActivityBackoff, Since: t0.Add(-time.Minute), Until: t0.Add(4 * time.Minute), Reason: "OutOfResources", Message: "1 node(s) not created: ZONE_RESOURCE_POOL_EXHAUSTED"},
				Accelerators: map[string]int64{"nvidia.com/gpu": 8}},
		},
		ScaleUps:  []status.ScaleUp{{Group: "cpu", From: 1, To: 2, Pods: 3, Why: "least-waste"}},
		Triggered: []status.Ref{{Namespace: "default", Name: "web-1"}},
		Pending: []status.PendingPods{{Pods: []status.Ref{{Namespace: "ml", Name: "train-0"}, {Namespace: "ml", Name: "train-1"}},
			Reasons: []status.GroupReason{{Group: "cpu", Reason: "NotFitTemplate", Predicate: "NodeResourcesFit", Message: "Insufficient nvidia.com/gpu"},
				{Group: "gpu", Reason: "BackedOff", Message: "backed off"}}}},
		Nodes: []status.Node{
			{Name: "cpu-1", Group: "cpu", State: status.NodeUnneeded, Reason: "NotUnneededLongEnough", Message: "unneeded for 1m of 10m", UnneededSince: t0.Add(-time.Minute)},
			{Name: "cpu-2", Group: "cpu", State: status.NodeKept, Reason: "BlockedByPod", Pod: &status.Ref{Namespace: "db", Name: "pg-0"}, DrainRule: "NotEnoughPdb", Message: "pod db/pg-0: PodDisruptionBudget db/pg allows no more disruptions"},
			{Name: "gpu-1", Group: "gpu", State: status.NodeKept, Reason: "NotUnderutilized", Message: "GPU utilization 1 is not below 0.5"},
		},
	}
}

// The document keeps upstream's layout field for field, then adds ours;
// a change of shape shows as a diff of the golden file.
func TestDocumentShape(t *testing.T) {
	d, text := status.Render(sample(), nil, status.DefaultRenderOptions())
	if again, err := d.Marshal(); err != nil || again != text {
		t.Fatalf("Marshal of the rendered document: %v, or it differs from Render's text", err)
	}
	golden := filepath.Join("testdata", "status.yaml")
	if *update {
		if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if text != string(want) {
		t.Errorf("status document differs from %s (run with -update to accept):\n%s", golden, text)
	}
	back, err := status.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := back.FindPending("ml/train-1"); !ok || e.Count != 2 || e.Reasons[0].Predicate != "NodeResourcesFit" {
		t.Errorf("pending entry read back %+v", e)
	}
	if n, ok := back.FindNode("cpu-2"); !ok || n.Pod.String() != "db/pg-0" || n.DrainRule != "NotEnoughPdb" {
		t.Errorf("node entry read back %+v", n)
	}
}

// A condition's transition time stays while its status stays, and moves
// when it changes.
func TestTransitionTimes(t *testing.T) {
	st := sample()
	first, _ := status.Render(st, nil, status.DefaultRenderOptions())
	st.Time = t0.Add(time.Minute)
	second, _ := status.Render(st, first, status.DefaultRenderOptions())
	g := second.NodeGroups[1]
	if !g.ScaleUp.LastTransitionTime.Time.Equal(t0) || !g.ScaleUp.LastProbeTime.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("unchanged backoff: transition %v probe %v", g.ScaleUp.LastTransitionTime, g.ScaleUp.LastProbeTime)
	}
	st.NodeGroups[1].ScaleUp = status.Activity{State: status.ActivityNone}
	st.Time = t0.Add(2 * time.Minute)
	third, _ := status.Render(st, second, status.DefaultRenderOptions())
	if got := third.NodeGroups[1].ScaleUp; got.Status != status.ActivityNone || !got.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("backoff ended: %+v", got)
	}
}

// At 5,000 nodes and 20,000 pending pods in distinct groups the whole
// account would be several MB; the document stays under its size, lists
// the most telling entries and counts the rest.
func TestDocumentFitsTheConfigMap(t *testing.T) {
	st := sample()
	st.Pending, st.Nodes = nil, nil
	for i := 0; i < 20000; i++ {
		st.Pending = append(st.Pending, status.PendingPods{
			Pods:    []status.Ref{{Namespace: "batch", Name: fmt.Sprintf("job-%05d-worker-0", i)}},
			Reasons: []status.GroupReason{{Group: "gpu-a100", Reason: "MaxNodeGroupSizeReached", Message: "max size 64 reached"}, {Group: "cpu", Reason: "NotFitTemplate", Predicate: "NodeResourcesFit", Message: "template has 0 nvidia.com/gpu, wants 8"}}})
	}
	for i := 0; i < 5000; i++ {
		n := status.Node{Name: fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i/250, i%250), Group: "cpu", State: status.NodeKept,
			Reason: "NotUnderutilized", Message: "cpu utilization 0.91 is not below --scale-down-utilization-threshold 0.5"}
		if i%100 == 0 {
			n.State, n.Reason, n.Message = status.NodeUnneeded, "NotUnneededLongEnough", "unneeded for 2m of 10m"
		}
		st.Nodes = append(st.Nodes, n)
	}
	o := status.DefaultRenderOptions()
	d, text := status.Render(st, nil, o)
	if len(text) > o.MaxBytes {
		t.Fatalf("document is %d bytes, over %d", len(text), o.MaxBytes)
	}
	if d.Omitted == nil || d.Omitted.PendingPods+countPods(d) != 20000 || d.Omitted.Nodes+len(d.Nodes) != 5000 {
		t.Fatalf("omitted %+v with %d pods and %d nodes listed: the counts do not add up", d.Omitted, countPods(d), len(d.Nodes))
	}
	for i, n := range d.Nodes {
		if i < 50 && n.State != status.NodeUnneeded {
			t.Fatalf("node %d listed is %s; unneeded nodes come before busy ones", i, n.State)
		}
	}
	if d.NodeReasons["NotUnderutilized"] != 4950 {
		t.Errorf("node reasons %v, want every kept node counted", d.NodeReasons)
	}
	if !strings.Contains(text, "safeToAutoscale: true") {
		t.Error("document lacks safeToAutoscale")
	}
	t.Logf("document %d bytes: %d pending entries, %d nodes listed; omitted %+v", len(text), len(d.PendingPods), len(d.Nodes), *d.Omitted)
}

func countPods(d *status.Document) int {
	n := 0
	for _, p := range d.PendingPods {
		n += len(p.Pods)
	}
	return n
}
