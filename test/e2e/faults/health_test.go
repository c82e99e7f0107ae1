package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/gpuscale/gpuscale/internal/localcluster"
	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
)

// handNode registers a node of a scope's group as someone else made it;
// ready ones are kept Ready by the kwok controller, the others report
// Ready=False and are left alone.
func (s *scope) handNode(name, group, cpu string, ready bool) {
	s.t.Helper()
	res := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110")}
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			kwok.LabelNodeGroup: s.group(group), LabelScope: s.ns, v1.LabelHostname: name}},
		Spec:   v1.NodeSpec{ProviderID: kwok.ProviderIDPrefix + name},
		Status: v1.NodeStatus{Capacity: res, Allocatable: res},
	}
	if ready {
		n.Annotations = map[string]string{kwok.AnnotationKwokNode: kwok.AnnotationKwokNodeValue}
	}
	ctx := context.Background()
	made, err := s.c.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	if ready {
		return
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := s.c.Client.CoreV1().Nodes().Get(ctx, made.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady",
			Message: "container runtime is down (injected by the test)", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		_, err = s.c.Client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		s.t.Fatal(err)
	}
}

// Fault: half the nodes go NotReady (a zone outage, a broken runtime).
// The health brake holds: no scale-up for the pending pod, no scale-down of
// the idle ready nodes; the status says ClusterUnhealthy and
// cluster_safe_to_autoscale reads 0. Once the broken nodes are gone, the
// loop scales again.
func TestHalfTheNodesNotReady(t *testing.T) {
	s := newScope(t, "brake")
	cfg := s.kwokConfig(time.Second, groupSpec{name: "cpu", max: 10, cpu: "4"})
	for i := range 2 {
		s.handNode(fmt.Sprintf("%s-ready-%d", s.ns, i), "cpu", "1", true)
		s.handNode(fmt.Sprintf("%s-down-%d", s.ns, i), "cpu", "4", false)
	}
	eventually(t, 30*time.Second, "the ready nodes to be Ready", func() bool {
		return s.schedulable(s.ns+"-ready-0") && s.schedulable(s.ns+"-ready-1")
	})
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	o := s.options("a")
	o.Address = fmt.Sprintf("127.0.0.1:%d", port)
	o.Autoscaler.OkTotalUnreadyCount = 1 // 2 of 4 unready: above 1 and above 45%
	o.Autoscaler.ClusterState.MaxNodeStartupTime = 2 * time.Second
	s.deploy(workload{name: "web", replicas: 1, cpu: "3"}) // fits no ready node
	most := peak(s.allNodes)
	s.start(o, startOptions{Config: cfg})
	eventually(t, 30*time.Second, "the status to say the cluster is unhealthy", func() bool {
		d := s.status(o.StatusConfigMapName)
		return d != nil && !d.SafeToAutoscale
	})
	time.Sleep(6 * time.Second) // several loops under the brake
	d := s.status(o.StatusConfigMapName)
	if h := d.ClusterWide.Health; h.Status != "Unhealthy" || h.Reason != autoscaler.HealthUnready || h.NodeCounts.Registered.Unready.Total != 2 ||
		d.ClusterWide.ScaleDown.Skipped == "" {
		t.Errorf("status health %+v, scale-down %+v; want Unhealthy for %s with 2 unready, and scale-down skipped", h, d.ClusterWide.ScaleDown, autoscaler.HealthUnready)
	}
	if v := metric(t, o.Address, "cluster_autoscaler_cluster_safe_to_autoscale"); v != "0" {
		t.Errorf("cluster_safe_to_autoscale = %q, want 0", v)
	}
	if s.pendingEntries() != 0 || most() != 4 || s.allNodes() != 4 {
		t.Fatalf("under the brake: %d creations, nodes peaked at %d, now %d; want none added and none removed", s.pendingEntries(), most(), s.allNodes())
	}
	// Recovery: the broken nodes are replaced by hand (deleted).
	for i := range 2 {
		if err := s.c.Client.CoreV1().Nodes().Delete(context.Background(), fmt.Sprintf("%s-down-%d", s.ns, i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "web to run once the cluster is healthy", func() bool { return s.running("web") == 1 })
	eventually(t, 10*time.Second, "cluster_safe_to_autoscale to read 1", func() bool {
		return metric(t, o.Address, "cluster_autoscaler_cluster_safe_to_autoscale") == "1"
	})
}
