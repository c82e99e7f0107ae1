package hpa

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// stage is one step from a load change to the HPA's decision, and how to
// tell it has happened.
type stage struct {
	name string
	done func(ctx context.Context) bool
}

// stageTimes follows a load change through the pipeline: each stage's
// condition is polled every 50 ms until it holds, and the time since start
// recorded. Polling adds up to 50 ms to each figure.
type stageTimes struct {
	start  time.Time
	names  []string
	at     map[string]time.Duration
	doneCh chan struct{}
}

func trackStages(ctx context.Context, start time.Time, stages []stage) *stageTimes {
	st := &stageTimes{start: start, at: map[string]time.Duration{}, doneCh: make(chan struct{})}
	for _, s := range stages {
		st.names = append(st.names, s.name)
	}
	go func() {
		defer close(st.doneCh)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		left := append([]stage(nil), stages...)
		for len(left) > 0 {
			var next []stage
			for _, s := range left {
				if s.done(ctx) {
					st.at[s.name] = time.Since(start)
				} else {
					next = append(next, s)
				}
			}
			left = next
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return st
}

// wait returns when every stage is done or ctx ends.
func (st *stageTimes) wait() { <-st.doneCh }

// report renders "stage: time since the change (+ time since the previous stage)".
func (st *stageTimes) report() string {
	var b strings.Builder
	var prev time.Duration
	for _, n := range st.names {
		d, ok := st.at[n]
		if !ok {
			fmt.Fprintf(&b, "  %-10s not reached\n", n)
			continue
		}
		fmt.Fprintf(&b, "  %-10s %6d ms (+%d ms)\n", n, d.Milliseconds(), (d - prev).Milliseconds())
		prev = d
	}
	return b.String()
}

// loadChangeStages are the stages of a load change on pod ns/pod to util,
// up to the HPA wanting desired replicas.
func loadChangeStages(t testing.TB, e *env, ns, pod, hpaName string, util float64, desired int32) []stage {
	key := ns + "/" + pod
	return []stage{
		{"exporter", func(context.Context) bool { return e.sim.Loads().Util(key) == util }},
		{"scrape", func(ctx context.Context) bool {
			v, _, err := e.promValue(ctx, fmt.Sprintf(`DCGM_FI_DEV_GPU_UTIL{exported_namespace=%q,exported_pod=%q}`, ns, pod))
			return err == nil && v == util
		}},
		{"adapter", func(ctx context.Context) bool {
			body, err := e.raw(ctx, fmt.Sprintf("/apis/custom.metrics.k8s.io/v1beta1/namespaces/%s/pods/%s/gpu_utilization", ns, pod))
			if err != nil {
				return false
			}
			// A named object comes back as a one-item MetricValueList.
			var v struct {
				Items []struct {
					Value string `json:"value"`
				} `json:"items"`
			}
			return json.Unmarshal(body, &v) == nil && len(v.Items) == 1 && v.Items[0].Value == fmt.Sprint(util)
		}},
		{"hpa", func(ctx context.Context) bool {
			s, _, err := getHPA(ctx, e, ns, hpaName)
			return err == nil && s.Desired == desired
		}},
	}
}
