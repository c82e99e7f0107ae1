package trace

import (
	"fmt"
	"io"
	"sort"
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

// AzureOptions shape the load curve.
type AzureOptions struct {
	// Bucket is the curve's step (default 1m): the load of each step is
	// the mean rate over it.
	Bucket  time.Duration
	Measure AzureMeasure
}

// AzureLoad reads the Azure LLM inference trace (TIMESTAMP,ContextTokens,
// GeneratedTokens) and returns its load over time as a step curve starting
// at the first request, with a final point of 0 after the last bucket.
func AzureLoad(name string, r io.Reader, o AzureOptions) ([]scenario.LoadPoint, error) {
	if o.Bucket <= 0 {
		o.Bucket = time.Minute
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
		at     time.Time
		tokens float64
	}
	reqs := make([]req, 0, len(t.rows))
	for i := range t.rows {
		s := t.str(i, cols[0])
		at, err := time.Parse("2006-01-02 15:04:05.999999999", s)
		if err != nil {
			return nil, fmt.Errorf("%s line %d column TIMESTAMP: %q is not \"YYYY-MM-DD hh:mm:ss.fffffff\"", name, i+2, s)
		}
		ctx, err := t.float(i, cols[1], "ContextTokens")
		if err != nil {
			return nil, err
		}
		gen, err := t.float(i, cols[2], "GeneratedTokens")
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, req{at, ctx + gen})
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%s: no requests", name)
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].at.Before(reqs[j].at) })
	first := reqs[0].at
	n := int(reqs[len(reqs)-1].at.Sub(first)/o.Bucket) + 1
	sums := make([]float64, n)
	for _, q := range reqs {
		v := 1.0
		if o.Measure == AzureTokens {
			v = q.tokens
		}
		sums[int(q.at.Sub(first)/o.Bucket)] += v
	}
	points := make([]scenario.LoadPoint, 0, n+1)
	for i, s := range sums {
		points = append(points, scenario.LoadPoint{At: metav1.Duration{Duration: time.Duration(i) * o.Bucket}, Value: s / o.Bucket.Seconds()})
	}
	points = append(points, scenario.LoadPoint{At: metav1.Duration{Duration: time.Duration(n) * o.Bucket}, Value: 0})
	return points, nil
}
