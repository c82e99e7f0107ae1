package inferencesim

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// ttftBuckets are the upper bounds of vLLM's
// vllm:time_to_first_token_seconds histogram (vllm/v1/metrics/loggers.py),
// so that a histogram_quantile over the stand-in reads as over a server.
var ttftBuckets = [...]float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
	1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}

// ttftHistogram is one server's time-to-first-token histogram: cumulative
// from the first scrape that saw the pod Ready, as a server's is from its
// start.
type ttftHistogram struct {
	// last is when the histogram was last advanced.
	last time.Time
	// started counts the requests begun, in fractions: a slot frees every
	// RequestSeconds/running seconds, which rarely falls on a scrape.
	started float64
	counts  [len(ttftBuckets)]uint64 // per bucket, not cumulative
	over    uint64                   // above the last bound (+Inf only)
	count   uint64
	sum     float64
}

// ttft is how long a request that starts now on a server waited for its
// first token: the prefill, after the requests queued on that server
// ahead of it. A full server frees SlotsPerPod slots every RequestSeconds,
// so by Little's law a queue of `waiting` drains in
// waiting*RequestSeconds/SlotsPerPod.
func (s *Simulator) ttft(ps podState) float64 {
	queue := float64(ps.waiting) * s.opts.RequestDuration.Seconds() / float64(s.opts.SlotsPerPod)
	return s.opts.PrefillDuration.Seconds() + queue
}

// advance records the requests that began on the server since the last
// scrape: running/RequestSeconds a second (each ending request frees a
// slot that the next takes), every one with the pod's ttft. Load held
// steady between scrapes, as the gauges are.
func (s *Simulator) advance(h *ttftHistogram, ps podState, now time.Time) {
	dt := now.Sub(h.last).Seconds()
	h.last = now
	if dt <= 0 || ps.running == 0 {
		return
	}
	before := math.Floor(h.started)
	h.started += dt * float64(ps.running) / s.opts.RequestDuration.Seconds()
	n := uint64(math.Floor(h.started) - before)
	if n == 0 {
		return
	}
	v := s.ttft(ps)
	i := 0
	for i < len(ttftBuckets) && v > ttftBuckets[i] {
		i++
	}
	if i < len(ttftBuckets) {
		h.counts[i] += n
	} else {
		h.over += n
	}
	h.count += n
	h.sum += float64(n) * v
}

// observe advances the histogram of every Ready server and forgets those
// of servers gone (a new pod starts from zero, as a restarted server
// does). It returns the histograms by pod key, for write.
func (s *Simulator) observe(models []modelState) map[string]*ttftHistogram {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]*ttftHistogram{}
	for _, m := range models {
		for _, ps := range m.pods {
			key := m.model.Namespace + "/" + ps.pod
			h, ok := s.ttfts[key]
			if !ok {
				h = &ttftHistogram{last: now}
			}
			s.advance(h, ps, now)
			seen[key] = h
		}
	}
	s.ttfts = seen
	// Copies, so that write reads them without the lock.
	out := make(map[string]*ttftHistogram, len(seen))
	for k, h := range seen {
		c := *h
		out[k] = &c
	}
	return out
}

// writeTTFT renders the histograms in the Prometheus text format.
func writeTTFT(b *strings.Builder, models []modelState, hists map[string]*ttftHistogram) {
	const name = "vllm:time_to_first_token_seconds"
	fmt.Fprintf(b, "# HELP %s Histogram of time to first token in seconds.\n# TYPE %s histogram\n", name, name)
	for _, m := range models {
		for _, ps := range m.pods {
			h := hists[m.model.Namespace+"/"+ps.pod]
			if h == nil {
				continue
			}
			labels := fmt.Sprintf("model_name=%q,namespace=%q,pod=%q", m.model.Name, m.model.Namespace, ps.pod)
			var cum uint64
			for i, le := range ttftBuckets {
				cum += h.counts[i]
				fmt.Fprintf(b, "%s_bucket{%s,le=%q} %d\n", name, labels, fmt.Sprint(le), cum)
			}
			fmt.Fprintf(b, "%s_bucket{%s,le=\"+Inf\"} %d\n", name, labels, cum+h.over)
			fmt.Fprintf(b, "%s_sum{%s} %g\n", name, labels, h.sum)
			fmt.Fprintf(b, "%s_count{%s} %d\n", name, labels, h.count)
		}
	}
}
