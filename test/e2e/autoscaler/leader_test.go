package autoscaler_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// Two replicas: only the Lease holder acts. When it stops, the other takes
// over within the lease duration, and no node is ordered twice.
func TestLeaderElection(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ctx := context.Background()
	replica := func(id string) *cluster.Autoscaler {
		o := fastOptions()
		o.LeaderElection.Enabled = true
		o.LeaderElection.Identity = id
		o.LeaderElection.LeaseDuration = 4 * time.Second
		o.LeaderElection.RenewDeadline = 3 * time.Second
		o.LeaderElection.RetryPeriod = 500 * time.Millisecond
		return c.StartAutoscaler(t, kwokConfig(t, 0), o)
	}
	holder := func() string {
		l, err := c.Client.CoordinationV1().Leases(ns).Get(ctx, "cluster-autoscaler", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	a := replica("replica-a")
	eventually(t, 20*time.Second, "replica-a to lead", func() bool { return holder() == "replica-a" })
	replica("replica-b")

	if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, deployment("gpu-hpa-test", 1, 1, "500m"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	count := func() int { return len(groupNodes(t, c.Client, "gpu-a10g")) }
	eventually(t, 60*time.Second, "the GPU pod to run", func() bool { return runningPods(t, c.Client, "gpu-hpa-test") == 1 })
	if holder() != "replica-a" {
		t.Fatalf("lease holder %q, want replica-a", holder())
	}

	a.Stop()
	eventually(t, 10*time.Second, "replica-b to take over", func() bool { return holder() == "replica-b" })
	c.ScaleDeployment(t, "default", "gpu-hpa-test", 2)
	eventually(t, 60*time.Second, "the second GPU pod to run", func() bool { return runningPods(t, c.Client, "gpu-hpa-test") == 2 })
	if peak := maxDuring(5*time.Second, count); peak != 2 {
		t.Fatalf("GPU nodes peaked at %d for two GPU pods across a leader change, want 2", peak)
	}
}
