package serving

import (
	"math"
	"strings"
	"testing"
)

// small is a profile whose figures make times easy to check by hand:
// prompts at 1,000 tokens/s, one sequence decodes at 10 tokens/s, a full
// batch at 20, and the KV cache holds 1,000 tokens.
func small() Profile {
	return Profile{GPU: "test", Model: "test", GPUs: 1, PrefillTokensPerSecond: 1000,
		DecodeTokensPerSecond: 10, BatchDecodeTokensPerSecond: 20, KVCacheTokens: 1000}
}

func req(at float64, in, out int64) Request {
	return Request{At: at, InputTokens: in, OutputTokens: out}
}

// fleet builds a fleet of p serving requests with one replica ready at 0.
func fleet(t *testing.T, p Profile, requests ...Request) *Fleet {
	t.Helper()
	f, err := NewFleet(p, requests)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add("r0", 0); err != nil {
		t.Fatal(err)
	}
	return f
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func checkTimes(t *testing.T, f *Fleet, firstTokens, dones []float64) {
	t.Helper()
	for i, o := range f.Outcomes() {
		if !near(o.FirstToken, firstTokens[i]) || !near(o.Done, dones[i]) {
			t.Errorf("request %d: first token at %g, done at %g; want %g and %g", i, o.FirstToken, o.Done, firstTokens[i], dones[i])
		}
	}
}

// One request alone: the first token at the end of its prefill (500 tokens
// at 1,000/s), the other ten output tokens at 10/s.
func TestOneRequestPrefillsThenDecodes(t *testing.T) {
	f := fleet(t, small(), req(0, 500, 11))
	f.Advance(10)
	checkTimes(t, f, []float64{0.5}, []float64{1.5})
}

// Prefill is one prompt at a time, and the KV cache admits only what fits:
// of three 401-token requests two are admitted, the third when the first
// finishes (at 0.4 s); it is prefilled after the second.
func TestPrefillQueueAndKVAdmission(t *testing.T) {
	f := fleet(t, small(), req(0, 400, 1), req(0, 400, 1), req(0, 400, 1))
	f.Advance(0.1)
	if st := f.Replicas()[0]; st.Waiting != 3 || !near(st.KVCacheUsage, 0.802) {
		t.Errorf("at 0.1 s: %d waiting, KV %.3f in use; want 3 and 0.802", st.Waiting, st.KVCacheUsage)
	}
	f.Advance(10)
	checkTimes(t, f, []float64{0.4, 0.8, 1.2}, []float64{0.4, 0.8, 1.2})
	s := f.Summarize(1.0)
	if s.Requests != 3 || s.Served != 3 || !near(s.TTFTP50, 0.8) || !near(s.TTFTP90, 1.2) || !near(s.SLOAttainment, 2.0/3) {
		t.Errorf("summary %+v: want p50 0.8, p90 1.2, 2 of 3 within 1 s", s)
	}
}

// Two requests that each take more than half the KV cache run one after
// the other: the second's first token waits for the first's 400 output
// tokens.
func TestKVCacheBoundsConcurrency(t *testing.T) {
	f := fleet(t, small(), req(0, 100, 401), req(0, 100, 401))
	f.Advance(100)
	checkTimes(t, f, []float64{0.1, 40.2}, []float64{40.1, 80.2})
}

// Decoding sequences share the batch throughput: alone one runs at 10
// tokens/s, two at 7.5 each when the batch gives 15.
func TestDecodeSharesTheBatchThroughput(t *testing.T) {
	p := small()
	p.BatchDecodeTokensPerSecond = 15
	f := fleet(t, p, req(0, 100, 76), req(0, 100, 76))
	f.Advance(100)
	// A: decodes alone 0.1-0.2 (1 token), then 74 at 7.5/s. B: 74 at 7.5/s
	// from 0.2, its last token alone at 10/s.
	checkTimes(t, f, []float64{0.1, 0.2}, []float64{0.2 + 74/7.5, 0.2 + 74/7.5 + 0.1})
}

// Requests go to the ready replica with the fewest outstanding, the first
// added on a tie.
func TestRoutesToLeastOutstanding(t *testing.T) {
	f, err := NewFleet(small(), []Request{req(0, 100, 50), req(0, 100, 50), req(0, 100, 50)})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if err := f.Add(n, 0); err != nil {
			t.Fatal(err)
		}
	}
	f.Advance(0.01)
	st := f.Replicas()
	if got := []int{st[0].Waiting + st[0].Running, st[1].Waiting + st[1].Running}; got[0] != 2 || got[1] != 1 {
		t.Errorf("outstanding per replica %v, want [2 1]", got)
	}
}

// A replica serves only once ready: a request that arrives during its
// start-up waits at the router, and its GPUs count from the scale-up.
func TestStartupDelaysService(t *testing.T) {
	f, err := NewFleet(small(), []Request{req(10, 500, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add("r0", 120); err != nil {
		t.Fatal(err)
	}
	f.Advance(60)
	if f.Held() != 1 || f.Replicas()[0].Ready {
		t.Errorf("at 60 s: %d held, ready %v; want the request held and the replica starting", f.Held(), f.Replicas()[0].Ready)
	}
	f.Advance(200)
	checkTimes(t, f, []float64{120.5}, []float64{120.5})
	s := f.Summarize(2)
	if !near(s.TTFTP50, 110.5) || s.SLOAttainment != 0 || !near(s.GPUHours, 200.0/3600) || !near(s.IdleGPUHours, 199.5/3600) {
		t.Errorf("summary %+v: want TTFT 110.5 s, none within 2 s, 200 GPU-seconds of which 199.5 idle", s)
	}
}

// Removing a replica sends its queued requests back through the router and
// lets the admitted ones finish; its GPUs are released when it is empty.
func TestRemoveDrainsAndReroutes(t *testing.T) {
	// The first holds 901 of 1,000 KV tokens for 10 s, so the second
	// waits in r0's queue.
	f := fleet(t, small(), req(0, 100, 801), req(0, 100, 1))
	f.Advance(1)
	if err := f.Add("r1", 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove("r0"); err != nil {
		t.Fatal(err)
	}
	if st := f.Replicas(); len(st) != 2 || !st[0].Draining || st[1].Draining {
		t.Errorf("after removing r0: %+v, want r0 draining beside r1", st)
	}
	f.Advance(200)
	checkTimes(t, f, []float64{0.1, 1.1}, []float64{80.1, 1.1})
	s := f.Summarize(1)
	// r0: 0 to 80.1 s, busy all of it; r1: 1 to 200 s, busy 0.1 s.
	if want := (80.1 + 199) / 3600; !near(s.GPUHours, want) {
		t.Errorf("GPU-hours %g, want %g", s.GPUHours, want)
	}
	if want := (199 - 0.1) / 3600; !near(s.IdleGPUHours, want) {
		t.Errorf("idle GPU-hours %g, want %g", s.IdleGPUHours, want)
	}
	if len(f.Replicas()) != 1 {
		t.Errorf("%d replicas after the drain, want 1", len(f.Replicas()))
	}
}

// A replica removed while it starts is released at once.
func TestRemoveWhileStarting(t *testing.T) {
	f, _ := NewFleet(small(), nil)
	if err := f.Add("r0", 120); err != nil {
		t.Fatal(err)
	}
	f.Advance(30)
	if err := f.Remove("r0"); err != nil {
		t.Fatal(err)
	}
	f.Advance(300)
	if s := f.Summarize(1); !near(s.GPUHours, 30.0/3600) || !near(s.IdleGPUHours, 30.0/3600) {
		t.Errorf("summary %+v: want 30 idle GPU-seconds", s)
	}
}

// A request larger than the KV cache is refused with the sizes, and counts
// against the SLO.
func TestRefusesWhatNoReplicaHolds(t *testing.T) {
	f := fleet(t, small(), req(0, 900, 101), req(0, 10, 1))
	f.Advance(10)
	o := f.Outcomes()[0]
	if !strings.Contains(o.Refused, "needs 1001 KV-cache tokens") || !strings.Contains(o.Refused, "holds 1000") {
		t.Errorf("refusal %q", o.Refused)
	}
	s := f.Summarize(1)
	if s.Refused != 1 || s.Served != 1 || s.SLOAttainment != 0.5 || !math.IsInf(s.TTFTP99, 1) {
		t.Errorf("summary %+v: want one refused, one served, half within the SLO, p99 infinite", s)
	}
}

func TestNewFleetRefusesBadInput(t *testing.T) {
	for name, c := range map[string]struct {
		p    Profile
		reqs []Request
		want string
	}{
		"out of order":   {small(), []Request{req(5, 1, 1), req(4, 1, 1)}, "request 1: arrives at 4s, before request 0 at 5s"},
		"negative count": {small(), []Request{req(0, -1, 1)}, "request 0: at 0, -1 input"},
		"no KV cache":    {func() Profile { p := small(); p.KVCacheTokens = 0; return p }(), nil, "kvCacheTokens must be at least 1, got 0"},
		"slow batch":     {func() Profile { p := small(); p.BatchDecodeTokensPerSecond = 5; return p }(), nil, "batchDecodeTokensPerSecond must be at least"},
	} {
		if _, err := NewFleet(c.p, c.reqs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	f := fleet(t, small())
	if err := f.Add("r0", 0); err == nil || !strings.Contains(err.Error(), `"r0": already running`) {
		t.Errorf("a second r0: %v", err)
	}
	if err := f.Remove("r9"); err == nil || !strings.Contains(err.Error(), `"r9": not running`) {
		t.Errorf("removing r9: %v", err)
	}
}

func TestPercentileNearestRank(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[float64]float64{0.5: 5, 0.9: 9, 0.99: 10, 0.01: 1} {
		if got := Percentile(v, p); got != want {
			t.Errorf("p%g = %g, want %g", p*100, got, want)
		}
	}
	if !math.IsNaN(Percentile(nil, 0.5)) {
		t.Error("no values: want NaN")
	}
}

// The work of a trace is the larger of its prefill and its decode time.
func TestWorkGPUSeconds(t *testing.T) {
	p := small()
	p.GPUs = 4
	// 3,000 prompt tokens are 3 s of prefill; 100 output tokens 5 s of
	// full-batch decode: 5 s on 4 GPUs.
	if got := WorkGPUSeconds(p, []Request{req(0, 1000, 50), req(9, 2000, 50)}); !near(got, 20) {
		t.Errorf("work %g GPU-seconds, want 20", got)
	}
}

// Work is spread in whole replicas, the rest carried forward: 150
// replica-seconds of prefill in the first minute are 2 replicas then and
// one more in the next minute with 0.5 minute of its own.
func TestWorkReplicasCarriesTheRest(t *testing.T) {
	p := small() // 1,000 prompt tokens/s: 1,000 tokens are 1 replica-second
	reqs := []Request{req(0, 150_000, 0), req(70, 30_000, 0)}
	got := WorkReplicas(p, reqs, 60)
	// Minute 0: 150 s -> 2 replicas, 30 s left; minute 1: 30+30 = 60 -> 1.
	if want := []int{2, 1}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("replicas per minute %v, want %v", got, want)
	}
	// What is left after the last minute, less than a replica's minute,
	// is dropped.
	if got := WorkReplicas(p, []Request{req(0, 200_000, 0)}, 60); len(got) != 1 || got[0] != 3 {
		t.Errorf("a burst of 200 s: %v, want [3]", got)
	}
	if got := WorkReplicas(p, []Request{req(0, 100_000, 0), req(61, 1000, 0)}, 120); len(got) != 1 || got[0] != 0 {
		t.Errorf("101 s in one 120 s bucket: %v, want [0]", got)
	}
	total := 0
	for _, n := range WorkReplicas(p, []Request{req(0, 1_000_000, 0)}, 60) {
		total += n
	}
	if total*60 > 1000 {
		t.Errorf("%d replica-minutes for 1,000 replica-seconds: more than the work", total)
	}
}
