package autoscaler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	pr "github.com/gpuscale/gpuscale/pkg/provisioningrequest"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// A ProvisioningRequest of the queued class (GKE's flex-start) on a group
// with queued capacity: the request waits in the cloud's queue
// (Provisioned=False, CapacityIsQueued) with no node bought anywhere,
// then gets both its nodes at once from the flex-start group, never from
// the on-demand one, Provisioned=True, and its pods run there.
func TestQueuedProvisioningRequestWaitsForTheQueue(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	cond := createRequest(t, c, dyn, "flex-train", "flex-trainer", pr.ClassQueuedProvisioning,
		map[string]string{pr.ParamMaxRunDurationSeconds: "3600"}, 2)
	nodes := func() int { return len(groupNodes(t, c.Client, "flex")) + len(groupNodes(t, c.Client, "ondemand")) }
	o := fastOptions()
	o.Dynamic = dyn
	o.Autoscaler.ProvisioningRequests.Enabled = true
	c.StartAutoscaler(t, queuedKwokConfig(t, 10*time.Second), o)

	var p *metav1.Condition
	eventually(t, 30*time.Second, "Provisioned=False, queued", func() bool {
		p = cond(pr.Provisioned)
		return p != nil && p.Status == metav1.ConditionFalse
	})
	if p.Reason != pr.ReasonCapacityIsQueued || !strings.Contains(p.Message, "flex") {
		t.Errorf("Provisioned=False %s: %q, want %s naming the flex group", p.Reason, p.Message, pr.ReasonCapacityIsQueued)
	}
	if peak := maxDuring(4*time.Second, nodes); peak != 0 {
		t.Fatalf("%d GPU nodes while the request waits in the queue, want none", peak)
	}
	eventually(t, 60*time.Second, "Provisioned=True once the queue grants it", func() bool {
		p = cond(pr.Provisioned)
		return p != nil && p.Status == metav1.ConditionTrue
	})
	eventually(t, 30*time.Second, "2 flex-start nodes", func() bool { return len(groupNodes(t, c.Client, "flex")) == 2 })
	consumingPods(t, c, "flex-train", "flex-trainer", pr.ClassQueuedProvisioning, 2)
	eventually(t, 60*time.Second, "the 2 consuming pods to run", func() bool { return runningPods(t, c.Client, "flex-trainer") == 2 })
	if n := len(groupNodes(t, c.Client, "ondemand")); n != 0 {
		t.Errorf("%d on-demand nodes bought for a queued request, want none", n)
	}
}

// queuedKwokConfig is a flex-start GPU group whose queue grants requests
// after delay, and an on-demand GPU group of the same nodes.
func queuedKwokConfig(t *testing.T, delay time.Duration) *kwok.Config {
	t.Helper()
	group := func(name, options string) string {
		return fmt.Sprintf(`
- name: %s
  minSize: 0
  maxSize: 4
  instanceType: g5.xlarge
  pricePerHour: 1.006
  zone: us-east-1a%s
  template:
    labels: {k8s.amazonaws.com/accelerator: nvidia-a10g}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    capacity: {cpu: "4", memory: 16Gi, pods: "110", nvidia.com/gpu: "1"}`, name, options)
	}
	cfg, err := kwok.ParseConfig([]byte(fmt.Sprintf("provisioningDelay: 1s\nqueuedProvisioningDelay: %s\nnodeGroups:%s%s\n", delay,
		group("flex", "\n  autoscalingOptions: {queuedprovisioning: true}"), group("ondemand", ""))))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
