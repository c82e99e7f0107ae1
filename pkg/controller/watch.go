package controller

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// watchReporter makes a lost API server visible: every informer's watch
// error is logged at once, then at most every interval per resource while
// it lasts, and counted; the wait for the caches at start says which are
// not synced yet, and gives up with an error after a timeout.
type watchReporter struct {
	log      *slog.Logger
	clock    clock.WithTicker
	metrics  *metrics
	interval time.Duration

	mu     sync.Mutex
	last   map[string]time.Time
	errors map[string]error
}

func newWatchReporter(log *slog.Logger, clk clock.WithTicker, m *metrics, interval time.Duration) *watchReporter {
	if interval <= 0 {
		interval = 30 * time.Second
	}
	return &watchReporter{log: log, clock: clk, metrics: m, interval: interval, last: map[string]time.Time{}, errors: map[string]error{}}
}

// attach sets the watch error handler of every informer.
func (w *watchReporter) attach(infs []namedInformer) error {
	for _, inf := range infs {
		name := inf.name
		err := inf.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			w.report(name, err)
		})
		if err != nil {
			return fmt.Errorf("informer %s: %w", name, err)
		}
	}
	return nil
}

func (w *watchReporter) report(resource string, err error) {
	w.metrics.errors.WithLabelValues("apiCallError").Inc()
	now := w.clock.Now()
	w.mu.Lock()
	last, seen := w.last[resource]
	w.errors[resource] = err
	quiet := seen && now.Sub(last) < w.interval
	if !quiet {
		w.last[resource] = now
	}
	w.mu.Unlock()
	if !quiet {
		w.log.Error("cannot list or watch the API server", "resource", resource, "err", err)
	}
}

// waitForSync waits for every informer cache, reporting the ones not yet
// synced (and the last error seen for them) every interval, and fails
// after timeout.
func (w *watchReporter) waitForSync(ctx context.Context, l *listers, timeout time.Duration) error {
	deadline := w.clock.Now().Add(timeout)
	tick := w.clock.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	lastReport := w.clock.Now()
	for {
		var waiting []string
		for _, inf := range l.informers {
			if !inf.informer.HasSynced() {
				waiting = append(waiting, inf.name)
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		now := w.clock.Now()
		if now.After(deadline) {
			return fmt.Errorf("informer caches did not sync within %s (%s): %s", timeout, strings.Join(waiting, ", "), w.lastErrors(waiting))
		}
		if now.Sub(lastReport) >= w.interval {
			w.log.Warn("waiting for the informer caches to sync", "waiting", waiting, "for", now.Sub(deadline.Add(-timeout)).Round(time.Second),
				"lastError", w.lastErrors(waiting))
			lastReport = now
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("informer caches did not sync (%s): %w", strings.Join(waiting, ", "), ctx.Err())
		case <-tick.C():
		}
	}
}

func (w *watchReporter) lastErrors(resources []string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range resources {
		if err := w.errors[r]; err != nil {
			return err.Error()
		}
	}
	return "no error reported yet"
}
