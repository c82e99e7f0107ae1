package kwok

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// TestRunReconcilesOnTheInjectedClock drives Run's ticker with the fake
// clock while the autoscaler side calls in concurrently (run with -race).
func TestRunReconcilesOnTheInjectedClock(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); e.p.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()

	e.must(e.p.IncreaseSize(e.ctx, "gpu-a10g", 1))
	e.must(e.p.Refresh(e.ctx))
	_ = e.p.NodeGroups()

	// Keep stepping virtual time one tick at a time until the node has
	// registered and advertised its GPU; the real-time bound only stops a
	// broken loop from hanging the test.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if nodes := e.nodes("gpu-a10g"); len(nodes) == 1 && gpu.Allocatable(&nodes[0]) == 1 {
			return
		}
		if e.clock.HasWaiters() {
			e.clock.Step(time.Second)
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no node with GPUs after virtual %s; nodes: %v", e.clock.Since(t0), e.nodes("gpu-a10g"))
}

func TestReconcileTwiceChangesNothingMore(t *testing.T) {
	e := newEnv(t)
	e.must(e.p.IncreaseSize(e.ctx, "gpu-a10g", 1))
	e.after(e.p.cfg.ProvisioningDelay + e.p.cfg.DevicePluginDelay)
	e.after(e.p.cfg.DevicePluginDelay)
	before := len(e.client.Actions())
	e.must(e.p.Reconcile(e.ctx))
	for _, a := range e.client.Actions()[before:] {
		if a.GetVerb() != "get" && a.GetVerb() != "list" {
			t.Errorf("an idle reconcile wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}
