package controller

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderElection configures the Lease that lets one replica act.
type LeaderElection struct {
	Enabled bool
	// Namespace of the Lease; "" means Options.Namespace.
	Namespace     string
	Name          string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// Identity of this replica; "" means hostname plus a random suffix.
	Identity string
}

// DefaultLeaderElection is upstream's: on, Lease "cluster-autoscaler", 15s/10s/2s.
func DefaultLeaderElection() LeaderElection {
	return LeaderElection{Enabled: true, Name: "cluster-autoscaler", LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// runWithLeaderElection runs lead while this replica holds the Lease. Losing
// the Lease stops the loop and returns: a replica that may have missed its
// renewals must not act, and its supervisor restarts it as a follower.
func (c *Controller) runWithLeaderElection(ctx context.Context, lead func(context.Context) error) error {
	le := c.opts.LeaderElection
	ns := le.Namespace
	if ns == "" {
		ns = c.opts.Namespace
	}
	id := le.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + string(uuid.NewUUID())
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, le.Name,
		c.client.CoreV1(), c.client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("leader election lock %s/%s: %w", ns, le.Name, err)
	}
	// The elector runs OnStartedLeading in a goroutine of its own and does
	// not wait for it: track it, so Run returns only once lead has.
	var (
		mu      sync.Mutex
		stopped bool
		leadErr error
		running sync.WaitGroup
	)
	leCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	leaderelection.RunOrDie(leCtx, leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				mu.Lock()
				if stopped {
					mu.Unlock()
					return
				}
				running.Add(1)
				mu.Unlock()
				defer running.Done()
				c.log.Info("became leader", "lease", ns+"/"+le.Name, "identity", id)
				err := lead(ctx)
				mu.Lock()
				leadErr = err
				mu.Unlock()
				cancel()
			},
			OnStoppedLeading: func() { c.log.Info("stopped leading", "identity", id) },
		},
	})
	mu.Lock()
	stopped = true
	mu.Unlock()
	running.Wait()
	if leadErr != nil {
		return leadErr
	}
	if ctx.Err() == nil {
		return fmt.Errorf("lost the leader Lease %s/%s", ns, le.Name)
	}
	return nil
}
