package autoscaler_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/controller"
	"github.com/gpuscale/gpuscale/pkg/looprecord"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// The seed's gpu-hpa-test Deployment grows beyond one GPU node: exactly one
// node is added for the extra pod, also when the new node's device plugin
// takes 20 s to advertise its GPU; scaled back, the extra node is drained
// and deleted, and the group's min size keeps the last one.
func TestGPUScaleUpAndDown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{{"device plugin ready at once", 0}, {"device plugin 20s late", 20 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster.Start(t, cluster.Options{})
			o := fastOptions()
			var record bytes.Buffer
			recorder := looprecord.NewRecorder(&record)
			o.Recorder = recorder
			a := c.StartAutoscaler(t, kwokConfig(t, tc.delay), o)
			ctx := context.Background()
			if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, deployment("gpu-hpa-test", 1, 1, "500m"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			count := func() int { return len(groupNodes(t, c.Client, "gpu-a10g")) }
			eventually(t, 90*time.Second, "the first GPU pod to run", func() bool { return runningPods(t, c.Client, "gpu-hpa-test") == 1 })
			if n := count(); n != 1 {
				t.Fatalf("%d GPU nodes for one GPU pod, want 1", n)
			}

			c.ScaleDeployment(t, "default", "gpu-hpa-test", 2)
			eventually(t, 90*time.Second, "the second GPU pod to run", func() bool { return runningPods(t, c.Client, "gpu-hpa-test") == 2 })
			if peak := maxDuring(5*time.Second, count); peak != 2 || count() != 2 {
				t.Fatalf("GPU nodes peaked at %d for two GPU pods, want exactly 2", peak)
			}

			c.ScaleDeployment(t, "default", "gpu-hpa-test", 0)
			eventually(t, 90*time.Second, "the idle GPU node to be removed", func() bool { return count() == 1 })
			if low := minDuring(8*time.Second, count); low != 1 {
				t.Fatalf("the group went below its min size 1 (saw %d nodes)", low)
			}
			a.Stop()
			replay(t, o, recorder, &record)
		})
	}
}

// replay steps a fresh decision core over the loops the live run recorded
// (snapshots, pending pods, outcomes): with its state changed only through
// Step's inputs, it must plan exactly what the live run planned, and the
// same actions through the Actuator interface must give the same at-once
// outcomes.
func replay(t *testing.T, o controller.Options, recorder *looprecord.Recorder, record *bytes.Buffer) {
	t.Helper()
	if err := recorder.Flush(); err != nil {
		t.Fatal(err)
	}
	records, err := looprecord.Read(record)
	if err != nil {
		t.Fatal(err)
	}
	actions := 0
	for _, r := range records {
		actions += len(r.Plan.Actions)
	}
	if len(records) < 10 || actions < 3 {
		t.Fatalf("recorded %d loops with %d actions: too few to prove anything", len(records), actions)
	}
	diffs, err := looprecord.Replay(o.Autoscaler, records, ledger{})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range diffs {
		if i < 3 {
			t.Error(d)
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("%d of %d replayed loops differ", len(diffs), len(records))
	}
	t.Logf("replayed %d loops (%d actions): same plans", len(records), actions)
}

// ledger accepts every action, as an in-memory cloud does.
type ledger struct{}

func (ledger) DecreaseTarget(context.Context, autoscaler.DecreaseTarget) error   { return nil }
func (ledger) DeleteInstances(context.Context, autoscaler.DeleteInstances) error { return nil }
func (ledger) ScaleUp(context.Context, autoscaler.ScaleUp) error                 { return nil }
func (ledger) SoftTaint(context.Context, autoscaler.SoftTaint) error             { return nil }
func (ledger) SoftUntaint(context.Context, autoscaler.SoftUntaint) error         { return nil }
func (ledger) Cordon(context.Context, autoscaler.Cordon) error                   { return nil }
func (ledger) Uncordon(context.Context, autoscaler.Uncordon) error               { return nil }
func (ledger) SetRequestConditions(context.Context, autoscaler.SetRequestConditions) error {
	return nil
}
func (ledger) RemoveNodes(context.Context, autoscaler.RemoveNodes) {}
