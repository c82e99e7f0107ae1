package faults_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
)

// cloudOutage fails the first calls of each operation, as a cloud API in
// trouble does: server errors, then throttling.
type cloudOutage struct {
	mu     sync.Mutex
	left   map[kwok.Operation]int
	failed map[kwok.Operation]int
}

func (c *cloudOutage) call(op kwok.Operation, _ string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left[op] == 0 {
		return nil
	}
	c.left[op]--
	c.failed[op]++
	if c.failed[op]%2 == 1 {
		return errors.New("503 Service Unavailable: the service is unavailable (injected)")
	}
	return errors.New("429 Too Many Requests: Rate exceeded (injected)")
}

func (c *cloudOutage) failures(op kwok.Operation) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed[op]
}

// Fault: the cloud API answers 5xx and throttles. Scale-ups that fail back
// the group off and are tried again when the backoff ends; the node comes
// once the API recovers, and only one. Deletions that fail leave the node
// untainted and are tried again after --scale-down-delay-after-failure;
// nothing is deleted twice and no pod is lost.
func TestCloudAPIErrorsAndThrottling(t *testing.T) {
	s := newScope(t, "cloud")
	outage := &cloudOutage{left: map[kwok.Operation]int{kwok.OpIncreaseSize: 4, kwok.OpDeleteNodes: 2}, failed: map[kwok.Operation]int{}}
	cfg := s.kwokConfig(time.Second, groupSpec{name: "cpu", max: 5, cpu: "4"})
	target := func() int { return s.instances("cpu") }
	most := peak(target)
	o := s.options("a")
	s.start(o, startOptions{Config: cfg, Faults: kwok.Faults{Call: outage.call}})
	start := time.Now()
	s.deploy(workload{name: "web", replicas: 1, cpu: "3"})
	sawBackoff := false
	eventually(t, 90*time.Second, "web to run once the API recovers", func() bool {
		if d := s.status(o.StatusConfigMapName); d != nil {
			for _, g := range d.NodeGroups {
				sawBackoff = sawBackoff || g.ScaleUp.BackoffInfo != nil
			}
		}
		return s.running("web") == 1
	})
	t.Logf("scale-up recovered after %d failed calls in %s", outage.failures(kwok.OpIncreaseSize), time.Since(start).Round(time.Second))
	if outage.failures(kwok.OpIncreaseSize) != 4 || !sawBackoff {
		t.Errorf("%d failed scale-ups, backoff seen in status: %v; want 4 and the group backed off", outage.failures(kwok.OpIncreaseSize), sawBackoff)
	}
	if p := most(); p != 1 {
		t.Fatalf("the group's target peaked at %d, want 1: failed calls must not be counted as nodes", p)
	}

	// Scale-down through a failing API.
	s.c.ScaleDeployment(t, s.ns, "web", 0)
	eventually(t, 90*time.Second, "the idle node to be removed once deletions succeed", func() bool { return len(s.nodes("cpu")) == 0 })
	if n := outage.failures(kwok.OpDeleteNodes); n != 2 {
		t.Errorf("%d failed deletions, want 2", n)
	}
	if logs := s.logs.String(); !strings.Contains(logs, "Rate exceeded (injected)") || !strings.Contains(logs, "Service Unavailable") {
		t.Errorf("the injected errors were not logged:\n%s", logs)
	}
}
