package config

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/gpuscale/gpuscale/pkg/inputlimit"
)

// RenderLimits bound one execution of a rule template. A template is a
// small program (range over an integer, recursion through define), so one
// line of configuration could otherwise fill memory or run for hours.
type RenderLimits struct {
	// MaxBytes is the most output the template may write.
	MaxBytes int
	// Timeout is the most time the execution may take.
	Timeout time.Duration
}

// The limits where templates run. At load a rule's templates are run once
// with small sample arguments, so their output is small; a request's
// matchers may name many objects, so its query may be longer.
const (
	// CheckMaxBytes bounds the sample rendering that validates a rule.
	CheckMaxBytes = 64 << 10
	// RequestMaxBytes bounds the rendering of a request's query.
	RequestMaxBytes = 1 << 20
	// RenderTimeout bounds every rendering; a sound template takes
	// microseconds.
	RenderTimeout = time.Second
)

// CheckLimits bound the sample rendering that validates a rule.
func CheckLimits() RenderLimits {
	return RenderLimits{MaxBytes: CheckMaxBytes, Timeout: RenderTimeout}
}

// RequestLimits bound the rendering of a request's query.
func RequestLimits() RenderLimits {
	return RenderLimits{MaxBytes: RequestMaxBytes, Timeout: RenderTimeout}
}

// errOutputLimit stops a template whose output outgrows its limit.
var errOutputLimit = errors.New("output limit reached")

// Render executes t with args within lim. A template that writes more than
// lim.MaxBytes is stopped at its next write. One that outruns lim.Timeout
// is abandoned: text/template cannot be interrupted, so its goroutine runs
// on until its next write (which then fails) or its end, and the caller
// gets an error at once. Load refuses such a rule, so at most one runs per
// rule and the process that read it exits.
func Render(t *template.Template, args any, lim RenderLimits) (string, error) {
	w := &boundedWriter{max: lim.MaxBytes}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		err := t.Execute(w, args)
		done <- result{w.b.String(), err}
	}()
	timer := time.NewTimer(lim.Timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if errors.Is(r.err, errOutputLimit) {
			return "", fmt.Errorf("the template writes more than %s (the limit); a range over a large number or a recursive define does this", inputlimit.Size(int64(lim.MaxBytes)))
		}
		return r.out, r.err
	case <-timer.C:
		w.abandoned.Store(true)
		return "", fmt.Errorf("the template ran for over %v (the limit); a range over a large number or a recursive define does this", lim.Timeout)
	}
}

// boundedWriter refuses writes past max, or after the execution has been
// abandoned.
type boundedWriter struct {
	b         strings.Builder
	max       int
	abandoned atomic.Bool
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	if w.abandoned.Load() || w.b.Len()+len(p) > w.max {
		return 0, errOutputLimit
	}
	return w.b.Write(p)
}
