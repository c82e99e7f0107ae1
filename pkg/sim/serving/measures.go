package serving

import (
	"math"
	"sort"
)

// ReplicaState is what a replica's metrics would show: the inputs of an
// HPA on queue depth or GPU utilization.
type ReplicaState struct {
	Name string
	// Ready is set once the replica serves; Draining once it was removed
	// and finishes what it admitted.
	Ready, Draining bool
	// Waiting is its requests without a first token (vLLM's waiting
	// requests plus the one being prefilled); Running those decoding.
	Waiting, Running int
	// BusySeconds is the time, from its start, during which it prefilled
	// or decoded anything: a GPU-utilization sample is its growth over the
	// sample's period.
	BusySeconds float64
	// KVCacheUsage is the share of its KV cache in use, 0 to 1.
	KVCacheUsage float64
}

// Replicas are the replicas not released (draining ones included), in the
// order they were added.
func (f *Fleet) Replicas() []ReplicaState {
	out := make([]ReplicaState, 0, len(f.replicas))
	for _, r := range f.replicas {
		out = append(out, ReplicaState{
			Name: r.name, Ready: r.readyAt <= f.now, Draining: r.draining,
			Waiting: r.waiting(), Running: len(r.decoding),
			BusySeconds: r.busy, KVCacheUsage: float64(r.kvUsed) / float64(f.profile.KVCacheTokens),
		})
	}
	return out
}

// Held is the requests waiting at the router for a ready replica.
func (f *Fleet) Held() int { return len(f.held) }

// Outcomes are what became of each request so far, in request order.
func (f *Fleet) Outcomes() []Outcome { return append([]Outcome(nil), f.outcomes...) }

// Summary is the serving measures of a run.
type Summary struct {
	// Requests counts the requests arrived by the end; Served those with a
	// first token; Refused those no replica could hold.
	Requests, Served, Refused int
	// TTFT are time-to-first-token percentiles in seconds, by nearest rank
	// over every arrived request; one without a first token by the end
	// counts as +Inf, so that a policy that leaves requests waiting
	// cannot look fast.
	TTFTP50, TTFTP90, TTFTP99 float64
	// SLO is the TTFT objective in seconds; SLOAttainment the share of
	// arrived requests whose first token came within it.
	SLO, SLOAttainment float64
	// GPUHours counts the GPUs of every replica from its start (the
	// scale-up, before boot and model load) to its release or the end;
	// IdleGPUHours the part of them with no request prefilling or decoding.
	GPUHours, IdleGPUHours float64
}

// Summarize measures the fleet at its current time against an SLO on time
// to first token (seconds).
func (f *Fleet) Summarize(slo float64) Summary {
	s := Summary{SLO: slo}
	ttft := make([]float64, 0, f.next)
	within := 0
	for i := 0; i < f.next; i++ {
		o := f.outcomes[i]
		if o.Refused != "" {
			s.Refused++
		}
		t := o.TTFT(f.requests[i])
		if !math.IsInf(t, 1) {
			s.Served++
		}
		if t <= slo {
			within++
		}
		ttft = append(ttft, t)
	}
	s.Requests = len(ttft)
	sort.Float64s(ttft)
	s.TTFTP50, s.TTFTP90, s.TTFTP99 = Percentile(ttft, 0.5), Percentile(ttft, 0.9), Percentile(ttft, 0.99)
	if s.Requests > 0 {
		s.SLOAttainment = float64(within) / float64(s.Requests)
	}
	gpus := float64(f.profile.GPUs)
	for _, group := range [][]*replica{f.gone, f.replicas} {
		for _, r := range group {
			end := f.now
			if r.releasedAt >= 0 {
				end = r.releasedAt
			}
			held := math.Max(0, end-r.startedAt)
			s.GPUHours += gpus * held / 3600
			s.IdleGPUHours += gpus * math.Max(0, held-r.busy) / 3600
		}
	}
	return s
}

// Percentile is the nearest-rank percentile (0 < p <= 1) of sorted
// values: the smallest value with at least p of them at or below it. NaN
// for no values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// WorkGPUSeconds is the least GPU time that can serve requests with
// profile: every prompt at the prefill throughput and every output token
// at the full-batch decode throughput, on the replica's GPUs. The model
// lets a replica prefill while it decodes, so the work is the larger of
// the two, not their sum. No policy serves the requests with fewer
// GPU-seconds, so it is the lower bound of a serving workload: work, not
// the replicas some autoscaler asked for.
func WorkGPUSeconds(p Profile, requests []Request) float64 {
	in, out := 0.0, 0.0
	for _, q := range requests {
		in += float64(q.InputTokens)
		out += float64(q.OutputTokens)
	}
	return float64(p.GPUs) * math.Max(in/p.PrefillTokensPerSecond, out/p.BatchDecodeTokensPerSecond)
}

// WorkReplicas spreads the work of requests over buckets of bucket
// seconds, in whole replicas: out[i] replicas from i x bucket. Each
// bucket's prompt and output work (replica-seconds at the prefill and the
// full-batch decode throughput) is added to what earlier buckets left; the
// bucket takes the whole replicas the larger of the two fills, and the
// rest carries to the next (work can wait, it cannot be done before it
// arrives). What is left after the last bucket, less than one replica's
// bucket, is dropped, so the total stays at most the work: a lower bound.
func WorkReplicas(p Profile, requests []Request, bucket float64) []int {
	if len(requests) == 0 || !(bucket > 0) {
		return nil
	}
	n := int(requests[len(requests)-1].At/bucket) + 1
	prefill, decode := make([]float64, n), make([]float64, n)
	for _, q := range requests {
		i := int(q.At / bucket)
		prefill[i] += float64(q.InputTokens) / p.PrefillTokensPerSecond
		decode[i] += float64(q.OutputTokens) / p.BatchDecodeTokensPerSecond
	}
	out := make([]int, 0, n)
	carryP, carryD := 0.0, 0.0
	for i := 0; i < n; i++ {
		carryP, carryD = carryP+prefill[i], carryD+decode[i]
		k := int(math.Max(carryP, carryD) / bucket)
		carryP, carryD = math.Max(0, carryP-float64(k)*bucket), math.Max(0, carryD-float64(k)*bucket)
		out = append(out, k)
	}
	return out
}
