package actuation_test

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/actuation"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
)

// cloud fails the scale-ups of the groups in fail and keeps the request
// conditions written.
type cloud struct {
	fail    map[string]bool
	written []autoscaler.SetRequestConditions
}

func (c *cloud) DecreaseTarget(context.Context, autoscaler.DecreaseTarget) error   { return nil }
func (c *cloud) DeleteInstances(context.Context, autoscaler.DeleteInstances) error { return nil }
func (c *cloud) ScaleUp(_ context.Context, a autoscaler.ScaleUp) error {
	if c.fail[a.Group] {
		return errors.New("out of capacity")
	}
	return nil
}
func (c *cloud) SoftTaint(context.Context, autoscaler.SoftTaint) error     { return nil }
func (c *cloud) SoftUntaint(context.Context, autoscaler.SoftUntaint) error { return nil }
func (c *cloud) Cordon(context.Context, autoscaler.Cordon) error           { return nil }
func (c *cloud) Uncordon(context.Context, autoscaler.Uncordon) error       { return nil }
func (c *cloud) RemoveNodes(context.Context, autoscaler.RemoveNodes)       {}
func (c *cloud) SetRequestConditions(_ context.Context, a autoscaler.SetRequestConditions) error {
	c.written = append(c.written, a)
	return nil
}

// A request's conditions follow its scale-up: provisioned when the cloud
// took it, the failure (with the cloud's error) when it did not.
func TestRequestConditionsFollowTheScaleUp(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	cond := func(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: "Provisioned", Status: status, Reason: reason, Message: msg}
	}
	accepted := metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"}
	plan := []autoscaler.Action{
		autoscaler.ScaleUp{Group: "gpu", Delta: 4, NewTarget: 4, Requests: []string{"ml/train"}},
		autoscaler.SetRequestConditions{Namespace: "ml", Name: "train", UID: "u1",
			Conditions:     []metav1.Condition{accepted, cond(metav1.ConditionTrue, "CapacityIsProvisioned", "found")},
			OnScaleUpError: []metav1.Condition{cond(metav1.ConditionFalse, "CapacityIsNotFound", "The scale-up failed")}},
	}
	for _, fail := range []bool{false, true} {
		c := &cloud{fail: map[string]bool{"gpu": fail}}
		res := actuation.Carry(context.Background(), c, clocktesting.NewFakePassiveClock(now), plan)
		if len(c.written) != 1 || len(c.written[0].Conditions) != 2 {
			t.Fatalf("fail %t: written %+v", fail, c.written)
		}
		got := c.written[0].Conditions[1]
		want := cond(metav1.ConditionTrue, "CapacityIsProvisioned", "found")
		if fail {
			want = cond(metav1.ConditionFalse, "CapacityIsNotFound", "The scale-up failed: out of capacity")
		}
		if got != want || c.written[0].Conditions[0] != accepted {
			t.Errorf("fail %t: wrote %+v, want Accepted and %+v", fail, c.written[0].Conditions, want)
		}
		var set autoscaler.RequestConditionsSet
		for _, o := range res.Outcomes {
			if s, ok := o.(autoscaler.RequestConditionsSet); ok {
				set = s
			}
		}
		if len(set.Conditions) != 2 || set.Conditions[1] != want || set.UID != "u1" {
			t.Errorf("fail %t: outcome %+v does not say what was written", fail, set)
		}
	}
}
