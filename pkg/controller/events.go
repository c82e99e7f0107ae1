package controller

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

func eventScheme() *runtime.Scheme { return scheme.Scheme }

// eventLimiter keeps the same event from being repeated every loop: an
// object gets a message again only after quiet has passed or when the
// message changes.
type eventLimiter struct {
	quiet time.Duration
	mu    sync.Mutex
	last  map[types.UID]sent
}

type sent struct {
	msg string
	at  time.Time
}

func newEventLimiter(quiet time.Duration) *eventLimiter {
	return &eventLimiter{quiet: quiet, last: map[types.UID]sent{}}
}

// allow reports whether to send msg about uid at now, and notes it.
func (l *eventLimiter) allow(uid types.UID, msg string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.last[uid]; ok && s.msg == msg && now.Sub(s.at) < l.quiet {
		return false
	}
	l.last[uid] = sent{msg, now}
	if len(l.last) > 100000 {
		for k, s := range l.last {
			if now.Sub(s.at) >= l.quiet {
				delete(l.last, k)
			}
		}
	}
	return true
}

// serveHTTP serves /metrics and /health-check. Health fails when no loop
// has finished within ten scan intervals (a stuck loop), once a first loop
// has run.
func (c *Controller) serveHTTP(addr string) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(c.metrics.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/health-check", func(w http.ResponseWriter, _ *http.Request) {
		c.mu.Lock()
		last := c.lastLoop
		c.mu.Unlock()
		if !last.IsZero() && c.clock.Since(last) > 10*c.opts.ScanInterval {
			http.Error(w, "no loop finished since "+last.UTC().Format(time.RFC3339), http.StatusInternalServerError)
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
