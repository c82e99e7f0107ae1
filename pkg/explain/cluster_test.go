package explain

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// rendered is the status ConfigMap as the autoscaler writes it: a loop's
// Status rendered by status.Render.
func rendered(t *testing.T, st status.Status) *v1.ConfigMap {
	t.Helper()
	_, text := status.Render(st, nil, status.DefaultRenderOptions())
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-autoscaler-status", Namespace: "kube-system"},
		Data: map[string]string{status.Key: text}}
}

// loop is a loop 5 s ago: gpu backed off, cpu scaling up, scale-down in
// cooldown, pods pending, nodes kept, consolidation waiting.
func loop() status.Status {
	at := now.Add(-5 * time.Second)
	return status.Status{
		Time: at,
		Cluster: status.Cluster{Health: status.Health{Safe: true},
			Nodes:             status.NodeCounts{Registered: 5, Ready: 3, NotStarted: 1, Unready: 1, DevicesOverdue: 1, Unregistered: 2, LongUnregistered: 1},
			ScaleUpInProgress: true,
			ScaleDown:         status.ScaleDown{Candidates: 1, CooldownUntil: at.Add(4 * time.Minute), CooldownReason: "--scale-down-delay-after-add"}},
		NodeGroups: []status.NodeGroup{
			{ID: "cpu", Min: 1, Max: 3, Target: 3, Nodes: status.NodeCounts{Registered: 2, Ready: 2, Unregistered: 1},
				ScaleUp: status.Activity{State: status.ActivityInProgress, Since: at.Add(-time.Minute)}, Candidates: 1},
			{ID: "gpu", Min: 0, Max: 4, Target: 0, Nodes: status.NodeCounts{Registered: 3, Ready: 1, NotStarted: 1, Unready: 1, DevicesOverdue: 1, Unregistered: 1, LongUnregistered: 1},
				ScaleUp: status.Activity{State: status.ActivityBackoff, Since: at.Add(-time.Minute), Until: at.Add(4 * time.Minute),
					Reason: "OutOfResources", Message: "1 node(s) not created: ZONE_RESOURCE_POOL_EXHAUSTED"}},
		},
		ScaleUps: []status.ScaleUp{{Group: "cpu", From: 2, To: 3, Pods: 2, Why: "least-waste", Options: []status.Option{
			{Group: "cpu", NodeCount: 1, PodCount: 2, Chosen: true, Verdict: "chosen"},
			{Group: "gpu", NodeCount: 1, PodCount: 2, DroppedBy: "least-waste", Score: "waste 0.900", BestScore: "waste 0.100"}}}},
		Pending: []status.PendingPods{{Pods: []status.Ref{{Namespace: "ml", Name: "t-0"}, {Namespace: "ml", Name: "t-1"}, {Namespace: "ml", Name: "t-2"}},
			Reasons: []status.GroupReason{{Group: "cpu", Reason: "MaxNodeGroupSizeReached", Message: "node group cpu is at its maximum size 3"},
				{Group: "gpu", Reason: "BackedOff", Message: "backed off until 10:04"}}}},
		Nodes: []status.Node{
			{Name: "cpu-1", Group: "cpu", State: status.NodeUnneeded, Reason: "NotUnneededLongEnough", Message: "unneeded for 1m of 10m"},
			{Name: "gpu-1", Group: "gpu", State: status.NodeKept, Reason: "BlockedByPod", Message: "pod ml/t-9 has local storage",
				Pod: &status.Ref{Namespace: "ml", Name: "t-9"}, DrainRule: "LocalStorageRequested"},
		},
		Consolidation: &status.Consolidation{Waiting: []status.Waiting{{Kind: "Delete", Nodes: []string{"cpu-1"}, Until: at.Add(3 * time.Minute)}}},
		OtherSchedulers: []status.SchedulerPods{{Scheduler: "volcano", Pods: 4, Reason: status.ReasonSchedulerNotBypassed,
			Message: `4 pod(s) of scheduler "volcano" left alone: it is neither default-scheduler nor in --bypassed-scheduler-names`}},
	}
}

func TestCluster(t *testing.T) {
	r, err := explainer(t, nil, rendered(t, loop())).Cluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "cluster: healthy, autoscaling; scaling up cpu; 1 node group(s) backed off; scale-down in cooldown\n",
		"nodes: 5 registered (3 ready, 1 starting (notStarted), 1 unready (1 of them without their GPUs past --max-node-startup-time)); 2 asked for and not registered yet (1 past --max-node-provision-time)",
		"scale-up: InProgress since 2026-03-01T09:59:55Z (5s ago)",
		"scale-down: CandidatesPresent, 1 candidate(s); in cooldown until 2026-03-01T10:03:55Z (in 3m55s) (--scale-down-delay-after-add)",
		"node group gpu: scale-ups backed off until 2026-03-01T10:03:55Z (in 3m55s): 1 node(s) not created: ZONE_RESOURCE_POOL_EXHAUSTED (OutOfResources)",
		"this loop scaled up node group cpu from 2 to 3",
		"pending pods no scale-up helps: 3 in 1 group(s)",
		`4 pod(s) of scheduler "volcano" left alone: it is neither default-scheduler nor in --bypassed-scheduler-names`,
		"nodes kept, by reason: BlockedByPod 1",
		"consolidation: delete cpu-1 waits until 2026-03-01T10:02:55Z")
	a := r.Cluster
	if a == nil || !a.Health.SafeToAutoscale || !a.ScaleDown.InCooldown || len(a.Backoffs) != 1 || a.Backoffs[0].Group != "gpu" ||
		a.Backoffs[0].ErrorCode != "OutOfResources" || a.PendingPods != 3 || a.Nodes.Registered.Unready.ResourceUnready != 1 ||
		a.Consolidation == nil || len(a.GroupsScalingUp) != 1 || len(a.OtherSchedulers) != 1 || a.OtherSchedulers[0].Pods != 4 {
		t.Errorf("structured answer %+v", a)
	}
}

// The health brake stops the loop: the answer leads with it.
func TestClusterHealthBrake(t *testing.T) {
	st := loop()
	st.Cluster.Health = status.Health{Safe: false, Reason: "TooManyUnready",
		Message: "4 of 5 nodes are unready, more than --ok-total-unready-count 3 and --max-total-unready-percentage 45"}
	st.Cluster.ScaleDown.CooldownUntil = time.Time{}
	r, err := explainer(t, nil, rendered(t, st)).Cluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "cluster: NOT autoscaling: the health brake holds (TooManyUnready)", "health: Unhealthy",
		"4 of 5 nodes are unready, more than --ok-total-unready-count 3", "neither scale-up nor scale-down runs")
	if r.Cluster.Health.SafeToAutoscale || r.Cluster.Health.Status != status.Unhealthy || r.Cluster.ScaleDown.InCooldown {
		t.Errorf("health %+v, scale-down %+v", r.Cluster.Health, r.Cluster.ScaleDown)
	}
	if strings.Contains(r.String(), "scale-down in cooldown") {
		t.Errorf("no cooldown was set:\n%s", r)
	}
}

func TestNodeGroup(t *testing.T) {
	objs := []runtime.Object{rendered(t, loop()),
		event("ConfigMap", "kube-system", "cluster-autoscaler-status", status.EventScaledUpGroup, "Scale-up: setting group cpu size to 3 instead of 2",
			now.Add(-6*time.Second), map[string]string{status.AnnotationNodeGroup: "cpu"}),
		event("ConfigMap", "kube-system", "cluster-autoscaler-status", status.EventScaledUpGroup, "Scale-up: setting group gpu size to 1 instead of 0",
			now.Add(-9*time.Minute), map[string]string{status.AnnotationNodeGroup: "gpu"}),
		// Folded by the recorder: no annotations left.
		event("ConfigMap", "kube-system", "cluster-autoscaler-status", status.EventScaledUpGroup, "(combined from similar events): Scale-up: setting group cpu size to 2 instead of 1",
			now.Add(-20*time.Minute), nil),
		event("Node", "", "cpu-0", status.EventScaleDown, "removing empty node", now.Add(-30*time.Minute),
			map[string]string{status.AnnotationNodeGroup: "cpu", status.AnnotationRemovalReason: status.RemovalEmpty}),
		event("Node", "", "gpu-0", status.EventScaleDown, "removing empty node", now.Add(-31*time.Minute),
			map[string]string{status.AnnotationNodeGroup: "gpu", status.AnnotationRemovalReason: status.RemovalEmpty}),
	}
	e := explainer(t, nil, objs...)
	r, err := e.NodeGroup(context.Background(), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "nodegroup cpu: target 3 (min 1, max 3), Healthy; scaling up\n",
		"nodes: 2 registered (2 ready); 1 asked for and not registered yet",
		"limit reached: at its maximum size 3: it cannot grow (MaxNodeGroupSizeReached)",
		"does not help 3 pending pod(s): node group cpu is at its maximum size 3 (MaxNodeGroupSizeReached)",
		"scale-up of node group cpu from 2 to 3 for 2 pod(s): least-waste",
		"gpu: 1 node(s) for 2 pod(s): dropped by least-waste: waste 0.900, the best had waste 0.100",
		"node cpu-1: Unneeded (NotUnneededLongEnough): unneeded for 1m of 10m",
		"scaled up 6s ago: Scale-up: setting group cpu size to 3 instead of 2",
		"removal 30m0s ago: cpu-0: it was empty",
		"(1 event(s) on the status ConfigMap were folded together")
	if strings.Contains(r.String(), "gpu-0") || strings.Contains(r.String(), "size to 1 instead of 0") {
		t.Errorf("another group's events in the answer:\n%s", r)
	}
	a := r.NodeGroup
	if a == nil || *a.Target != 3 || len(a.RecentScaleUps) != 1 || len(a.RecentRemovals) != 1 || a.FoldedEvents != 1 || a.Backoff != nil {
		t.Errorf("structured answer %+v", a)
	}

	r, err = e.NodeGroup(context.Background(), "gpu")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "nodegroup gpu: target 0 (min 0, max 4), Healthy; scale-ups backed off",
		"node group gpu: scale-ups backed off until 2026-03-01T10:03:55Z (in 3m55s): 1 node(s) not created: ZONE_RESOURCE_POOL_EXHAUSTED (OutOfResources)",
		"limit reached: at its minimum size 0: scale-down removes none of its nodes (NodeGroupMinSizeReached)",
		"node gpu-1: Kept (BlockedByPod): pod ml/t-9 has local storage")
	if r.NodeGroup.Backoff == nil || r.NodeGroup.Backoff.Until == nil {
		t.Errorf("backoff %+v", r.NodeGroup.Backoff)
	}

	if _, err := e.NodeGroup(context.Background(), "tpu"); err == nil || err.Error() != "node group tpu is not in the autoscaler's status (its node groups: cpu, gpu)" {
		t.Errorf("unknown group: %v", err)
	}
}

// The upstream Cluster Autoscaler writes a status of the same name and
// layout, without gpuscale's safeToAutoscale: explain says whose it is
// rather than reading the missing field as the health brake.
func TestClusterStatusNotWrittenByGpuscale(t *testing.T) {
	upstream := `time: 2026-11-26 09:59:55 +0000 UTC
autoscalerStatus: Running
clusterWide:
  health:
    status: Healthy
    nodeCounts:
      registered: {total: 3, ready: 3, notStarted: 0}
  scaleUp:
    status: NoActivity
  scaleDown:
    status: NoCandidates
`
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-autoscaler-status", Namespace: "kube-system"},
		Data: map[string]string{status.Key: upstream}}
	_, err := explainer(t, nil, cm).Cluster(context.Background())
	if err == nil {
		t.Fatal("a status without safeToAutoscale was explained as gpuscale's")
	}
	for _, want := range []string{"status ConfigMap kube-system/cluster-autoscaler-status was not written by gpuscale",
		"no safeToAutoscale field", "autoscalerStatus Running", "upstream Cluster Autoscaler"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "health brake") {
		t.Errorf("error %q speaks of the health brake", err)
	}
}
