package faults_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// stockout is a cloud with no capacity for one group: it remembers when it
// first said so (when the autoscaler's refresh saw the failure) and how
// many nodes of the group were asked for.
type stockout struct {
	mu    sync.Mutex
	group string
	first time.Time
	asked map[string]bool
}

func (o *stockout) outOfCapacity(group, node string) bool {
	if group != o.group {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.first.IsZero() {
		o.first = time.Now()
	}
	o.asked[node] = true
	return true
}

func (o *stockout) seen() (time.Time, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.first, len(o.asked)
}

// Fault: the cheapest GPU group's launches fail for capacity. The
// autoscaler sees the failure at its next refresh, backs the group off and
// grows the next group in the same loop, well within 60 seconds of the
// failure being visible and long before --max-node-provision-time (15
// minutes, left at its default); status and events name the group and the
// cloud's reason, and the stocked-out group is not asked again while it is
// backed off.
func TestGPUStockoutFallsBackToTheNextGroup(t *testing.T) {
	s := newScope(t, "stockout")
	cloud := &stockout{group: s.group("spot"), asked: map[string]bool{}}
	cfg := s.kwokConfig(2*time.Second,
		groupSpec{name: "spot", max: 3, cpu: "8", gpus: 1, price: 1},
		groupSpec{name: "ondemand", max: 3, cpu: "8", gpus: 1, price: 3})
	o := s.options("a")
	o.Autoscaler.ScaleUp.Expander = "price"
	o.Autoscaler.ClusterState.Backoff.Initial = 5 * time.Minute
	o.Autoscaler.ClusterState.Backoff.Max = 30 * time.Minute
	s.start(o, startOptions{Config: cfg, Faults: kwok.Faults{OutOfCapacity: cloud.outOfCapacity}})
	s.deploy(workload{name: "train", replicas: 1, cpu: "1", gpus: 1})

	var fallback time.Time
	eventually(t, 60*time.Second, "the next group to be grown", func() bool {
		if s.instances("ondemand") > 0 {
			fallback = time.Now()
			return true
		}
		return false
	})
	visible, asked := cloud.seen()
	if visible.IsZero() {
		t.Fatal("the stocked-out group was never asked for a node: the price expander should pick it first")
	}
	took := fallback.Sub(visible)
	t.Logf("failure visible at refresh, next group grown %s later", took.Round(100*time.Millisecond))
	if took > 60*time.Second {
		t.Errorf("fallback took %s, want within 60s of the failure being visible", took)
	}
	eventually(t, 60*time.Second, "the pod to run on the next group's node", func() bool { return s.running("train") == 1 })
	if _, n := cloud.seen(); n != asked || n != 1 {
		t.Errorf("%d node(s) asked of the stocked-out group, want 1: it is backed off", n)
	}
	doc := s.status(o.StatusConfigMapName)
	if doc == nil {
		t.Fatal("no status ConfigMap")
	}
	found := false
	for _, g := range doc.NodeGroups {
		if g.Name == s.group("spot") {
			found = true
			if g.ScaleUp.Status != status.ActivityBackoff || g.ScaleUp.BackoffInfo == nil || !strings.Contains(g.ScaleUp.BackoffInfo.ErrorMessage, kwok.CodeOutOfCapacity) {
				t.Errorf("status of the stocked-out group %+v: want backed off with the cloud's reason", g.ScaleUp)
			}
		}
	}
	if !found {
		t.Errorf("the stocked-out group is missing from the status")
	}
	evs, err := s.c.Client.CoreV1().Events(s.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + status.EventFailedToScaleUpGroup})
	if err != nil || len(evs.Items) == 0 || !strings.Contains(evs.Items[0].Message, s.group("spot")) || !strings.Contains(evs.Items[0].Message, kwok.CodeOutOfCapacity) {
		t.Errorf("FailedToScaleUpGroup events %v (%v): want one naming the group and the cloud's code", evs, err)
	}
}
