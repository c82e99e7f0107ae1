package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/controller"
)

// Autoscaler is gpuscale's live controller with the kwok provider, run in
// the test process against a Cluster.
type Autoscaler struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// StartAutoscaler runs the controller with the kwok groups of cfg (their
// state kept in o.Namespace) until Stop or the end of tb.
func (c *Cluster) StartAutoscaler(tb testing.TB, cfg *kwok.Config, o controller.Options) *Autoscaler {
	tb.Helper()
	p, err := kwok.New(kwok.Options{Client: c.Client, Config: cfg, Namespace: o.Namespace, Logger: o.Logger})
	if err != nil {
		tb.Fatal(err)
	}
	ctrl, err := controller.New(c.Client, p, o)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Autoscaler{cancel: cancel, done: make(chan error, 1)}
	go func() { a.done <- ctrl.Run(ctx) }()
	tb.Cleanup(a.Stop)
	return a
}

// Stop cancels the controller and waits for it to return (up to 30 s), so
// a test can stop one mid-work and start another, as a restart would.
func (a *Autoscaler) Stop() {
	a.once.Do(func() {
		a.cancel()
		select {
		case <-a.done:
		case <-time.After(30 * time.Second):
		}
	})
}
