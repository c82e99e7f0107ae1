package controller

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/utils/clock"
)

// Liveness are the limits of /health-check, with the upstream Cluster
// Autoscaler's meanings: a replica that leads must finish a first loop
// within MaxStartupTime (--max-startup-time, 20m), start a loop at least
// every MaxInactivity (--max-inactivity, 10m) and finish one without error
// at least every MaxFailingTime (--max-failing-time, 15m); otherwise the
// health check fails and the kubelet restarts it. A replica waiting for
// the leader Lease is healthy.
type Liveness struct {
	MaxInactivity  time.Duration
	MaxFailingTime time.Duration
	MaxStartupTime time.Duration
}

// DefaultLiveness are the upstream defaults.
func DefaultLiveness() Liveness {
	return Liveness{MaxInactivity: 10 * time.Minute, MaxFailingTime: 15 * time.Minute, MaxStartupTime: 20 * time.Minute}
}

// liveness tracks the loop's activity for /health-check.
type liveness struct {
	limits Liveness
	clock  clock.PassiveClock

	mu           sync.Mutex
	leadingSince time.Time // zero while not leading
	lastActivity time.Time
	lastSuccess  time.Time
}

func (l *liveness) startLeading() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leadingSince, l.lastActivity, l.lastSuccess = l.clock.Now(), time.Time{}, time.Time{}
}

func (l *liveness) stopLeading() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leadingSince = time.Time{}
}

// loopStarted and loopSucceeded record a loop's start and its success.
func (l *liveness) loopStarted(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastActivity = t
}

func (l *liveness) loopSucceeded(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastSuccess, l.lastActivity = t, later(l.lastActivity, t)
}

// check says why the replica is unhealthy, or nil.
func (l *liveness) check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leadingSince.IsZero() {
		return nil
	}
	now := l.clock.Now()
	if l.lastSuccess.IsZero() {
		if d := now.Sub(l.leadingSince); d > l.limits.MaxStartupTime {
			return fmt.Errorf("no loop has succeeded in the %s since this replica started leading (--max-startup-time %s)",
				d.Round(time.Second), l.limits.MaxStartupTime)
		}
		return nil
	}
	if d := now.Sub(l.lastActivity); d > l.limits.MaxInactivity {
		return fmt.Errorf("no loop has started for %s (--max-inactivity %s)", d.Round(time.Second), l.limits.MaxInactivity)
	}
	if d := now.Sub(l.lastSuccess); d > l.limits.MaxFailingTime {
		return fmt.Errorf("every loop has failed for %s (--max-failing-time %s)", d.Round(time.Second), l.limits.MaxFailingTime)
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// serveHTTP serves /metrics and /health-check.
func (c *Controller) serveHTTP(addr string) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(c.metrics.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/health-check", func(w http.ResponseWriter, _ *http.Request) {
		if err := c.live.check(); err != nil {
			http.Error(w, "Error: "+err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("OK"))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}
