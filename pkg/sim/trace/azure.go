package trace

import (
	"errors"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// AzureMeasure is what the Azure trace's load counts.
type AzureMeasure string

// Measures of load.
const (
	// AzureRequests is requests per second.
	AzureRequests AzureMeasure = "requests"
	// AzureTokens is tokens (context plus generated) per second.
	AzureTokens AzureMeasure = "tokens"
)

// ErrTooLong marks a trace refused for spanning more than allowed.
var ErrTooLong = errors.New("the trace spans too long")

// AzureOptions shape the load curve.
type AzureOptions struct {
	// Bucket is the curve's step (0 means 1m; negative is an error): the
	// load of each step is the mean rate over it.
	Bucket  time.Duration
	Measure AzureMeasure
	// MaxSpan, when set, is the longest time the trace may span from its
	// first request to its last; a longer trace is refused naming the row
	// that goes past it, before any memory is spent on the curve.
	MaxSpan time.Duration
}

// MaxLoadPoints bounds the load curve an Azure trace becomes: a week in
// one-second buckets, far finer than the autoscaler's loop.
const MaxLoadPoints = 7 * 24 * 3600

// AzureLoad reads the Azure LLM inference trace (TIMESTAMP,ContextTokens,
// GeneratedTokens) and returns its load over time as a step curve starting
// at the first request, with a final point of 0 after the last bucket.
// TIMESTAMP is a date-time (the trace's "2023-11-16 18:17:03.9799600",
// RFC 3339, ...) or seconds. Requests must come in time order: a request
// log that goes back in time is damaged, and sorting it would hide that
// one bad row can stretch the curve over years; the row is refused with
// its line and the previous one's.
func AzureLoad(name string, r io.Reader, o AzureOptions) ([]scenario.LoadPoint, error) {
	if o.Bucket == 0 {
		o.Bucket = time.Minute
	}
	if o.Bucket < 0 {
		return nil, fmt.Errorf("azure trace bucket: must be positive, got %s", o.Bucket)
	}
	if o.Measure == "" {
		o.Measure = AzureRequests
	}
	if o.Measure != AzureRequests && o.Measure != AzureTokens {
		return nil, fmt.Errorf("azure trace measure: must be %q or %q, got %q", AzureRequests, AzureTokens, o.Measure)
	}
	t, err := readTable(name, r)
	if err != nil {
		return nil, err
	}
	cols, err := t.need("TIMESTAMP", "ContextTokens", "GeneratedTokens")
	if err != nil {
		return nil, err
	}
	type req struct {
		at     float64 // seconds
		tokens float64
	}
	times := newTimeColumns(t, time.Second)
	reqs := make([]req, 0, len(t.rows))
	prevRow := -1
	for i := range t.rows {
		at, empty, err := times.seconds(i, cols[0])
		if err != nil {
			return nil, err
		}
		if empty {
			return nil, t.cellError(i, cols[0], "empty: every request needs its time")
		}
		if prevRow >= 0 && at < reqs[len(reqs)-1].at {
			return nil, t.cellError(i, cols[0], "%s is before the previous request's %s (line %d): the trace must be in time order",
				t.str(i, cols[0]), t.str(prevRow, cols[0]), t.line(prevRow))
		}
		if len(reqs) > 0 && o.MaxSpan > 0 && seconds(at-reqs[0].at) > o.MaxSpan {
			return nil, fmt.Errorf("%w: %w", ErrTooLong, t.cellError(i, cols[0], "%s is %s after the first request (line %d), more than the %s a trace may span",
				t.str(i, cols[0]), seconds(at-reqs[0].at), t.line(0), o.MaxSpan))
		}
		ctx, err := t.count(i, cols[1], "a token count", true, maxTraceTokens)
		if err != nil {
			return nil, err
		}
		gen, err := t.count(i, cols[2], "a token count", true, maxTraceTokens)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, req{at, ctx + gen})
		prevRow = i
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%s: no requests", name)
	}
	first := reqs[0].at
	bucket := o.Bucket.Seconds()
	if span := reqs[len(reqs)-1].at - first; span/bucket >= MaxLoadPoints {
		return nil, fmt.Errorf("%s: a trace of %s in buckets of %s would be a curve of %.0f points, over the %d limit; use a larger bucket",
			name, seconds(span), o.Bucket, span/bucket+1, MaxLoadPoints)
	}
	n := int((reqs[len(reqs)-1].at-first)/bucket) + 1
	sums := make([]float64, n)
	for _, q := range reqs {
		v := 1.0
		if o.Measure == AzureTokens {
			v = q.tokens
		}
		sums[min(int((q.at-first)/bucket), n-1)] += v
	}
	points := make([]scenario.LoadPoint, 0, n+1)
	for i, s := range sums {
		points = append(points, scenario.LoadPoint{At: metav1.Duration{Duration: time.Duration(i) * o.Bucket}, Value: s / bucket})
	}
	points = append(points, scenario.LoadPoint{At: metav1.Duration{Duration: time.Duration(n) * o.Bucket}, Value: 0})
	return points, nil
}
