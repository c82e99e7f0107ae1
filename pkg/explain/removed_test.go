package explain

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// removalEvents are the events the autoscaler writes removing a node: the
// node's ScaleDown when its drain begins and the status ConfigMap's when
// it is gone.
func removalEvents(node, group, reason, cmReason, started string, at time.Time) []runtime.Object {
	a := map[string]string{status.AnnotationNodeGroup: group, status.AnnotationRemovalReason: reason}
	done := map[string]string{status.AnnotationNodeGroup: group, status.AnnotationRemovalReason: reason, status.AnnotationNode: node}
	return []runtime.Object{
		event("Node", "", node, status.EventScaleDown, started, at, a),
		event("ConfigMap", "kube-system", "cluster-autoscaler-status", cmReason, "Scale-down: node "+node+" removed with drain", at.Add(20*time.Second), done),
	}
}

func TestNodeThatIsGone(t *testing.T) {
	objs := append(removalEvents("cpu-7", "cpu", status.RemovalUnderutilized, status.EventScaleDown,
		"removing node (underutilized), evicting 2 pod(s): default/a, default/b", now.Add(-3*time.Minute)),
		removalEvents("gpu-2", "gpu", status.RemovalEmpty, status.EventScaleDownEmpty, "removing empty node", now.Add(-10*time.Minute))...)
	objs = append(objs, removalEvents("gpu-3", "gpu", status.RemovalConsolidation, status.EventScaleDown,
		"removing node (delete: its pods fit on gpu-4; saves $1.20/h), evicting 1 pod(s): ml/t-0", now.Add(-time.Minute))...)
	// A drain that began and whose end no event records (a folded event).
	objs = append(objs, event("Node", "", "cpu-9", status.EventScaleDown, "removing node (unready), evicting 0 pod(s): ",
		now.Add(-2*time.Minute), map[string]string{status.AnnotationNodeGroup: "cpu", status.AnnotationRemovalReason: status.RemovalUnready}),
		event("Node", "", "cpu-9", status.EventScaleDownFailed, "draining: eviction refused", now.Add(-20*time.Minute), nil))
	// An instance that never registered, named by its provider ID.
	objs = append(objs, event("ConfigMap", "kube-system", "cluster-autoscaler-status", status.EventDeleteUnregistered,
		"Removed unregistered node aws:///us-east-1a/i-0abc", now.Add(-4*time.Minute),
		map[string]string{status.AnnotationNode: "aws:///us-east-1a/i-0abc", status.AnnotationNodeGroup: "gpu", status.AnnotationRemovalReason: status.RemovalUnregistered}))
	// A node with events but none of a removal.
	objs = append(objs, event("Node", "", "odd", status.EventGPUsNotAdvertised, "node registered without allocatable accelerators", now.Add(-time.Hour/2), nil))
	e := explainer(t, nil, objs...)
	cases := []struct {
		node, state, reason string
		want                []string
	}{
		{"cpu-7", NodeRemoved, status.RemovalUnderutilized, []string{
			"node cpu-7: was removed by the autoscaler 2m40s ago: it was underutilized and its pods fit on other nodes",
			"node group: cpu", "removal began 2026-03-01T09:57:00Z (3m0s ago): removing node (underutilized), evicting 2 pod(s): default/a, default/b",
			"removal done 2026-03-01T09:57:20Z (2m40s ago): Scale-down: node cpu-7 removed with drain"}},
		{"gpu-2", NodeRemoved, status.RemovalEmpty, []string{"was removed by the autoscaler 9m40s ago: it was empty (no pod had to move)"}},
		{"gpu-3", NodeRemoved, status.RemovalConsolidation, []string{"consolidation: the cluster is cheaper without it",
			"removing node (delete: its pods fit on gpu-4; saves $1.20/h)"}},
		{"cpu-9", NodeGone, status.RemovalUnready, []string{"no longer exists; the autoscaler began removing it 2m0s ago (it was unready",
			"and no event records the end", "earlier, a removal failed 20m0s ago: draining: eviction refused"}},
		{"i-0abc", NodeRemoved, status.RemovalUnregistered, []string{
			"was never a node: the autoscaler deleted instance aws:///us-east-1a/i-0abc 4m0s ago because it did not register"}},
		{"odd", NodeGone, "", []string{"no longer exists; no event says the autoscaler removed it", "GPUsNotAdvertised 30m0s ago"}},
	}
	for _, tc := range cases {
		t.Run(tc.node, func(t *testing.T) {
			r, err := e.Node(context.Background(), tc.node)
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, r, tc.want...)
			a := r.Node
			if a == nil || a.Exists || a.State != tc.state {
				t.Fatalf("answer %+v, want state %s", a, tc.state)
			}
			switch {
			case a.Removal == nil && tc.reason != "":
				t.Errorf("no removal, want reason %q", tc.reason)
			case a.Removal != nil && a.Removal.Reason != tc.reason:
				t.Errorf("removal reason %q, want %q", a.Removal.Reason, tc.reason)
			}
		})
	}
	// gpu-3's events must not answer for gpu.
	if _, err := e.Node(context.Background(), "gpu"); err == nil {
		t.Error("node gpu: answered from another node's events")
	}
}
