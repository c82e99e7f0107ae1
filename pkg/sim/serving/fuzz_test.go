package serving

import (
	"fmt"
	"math"
	"testing"
)

// FuzzFleet: any requests and any replicas added and removed along the way
// never stall the model or lose a request: once a replica serves to the
// end, every request that fits the KV cache has its first token and is
// done, in time order of its own steps, and GPU-hours cover idle ones.
func FuzzFleet(f *testing.F) {
	f.Add([]byte{0, 10, 1, 5, 3, 200, 2, 7, 9, 1, 4, 0})
	f.Add([]byte{255, 255, 255, 0, 0, 0, 1, 1, 1, 128, 64, 32})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := small()
		var reqs []Request
		at := 0.0
		for i := 0; i+2 < len(data) && len(reqs) < 64; i += 3 {
			at += float64(data[i]) / 16
			reqs = append(reqs, Request{At: at, InputTokens: int64(data[i+1]) * 5, OutputTokens: int64(data[i+2]) % 40})
		}
		fl, err := NewFleet(p, reqs)
		if err != nil {
			t.Fatal(err)
		}
		now, live := 0.0, 0
		for i, b := range data {
			now += float64(b%32) / 4
			fl.Advance(now)
			switch {
			case b%3 == 0 || live == 0:
				if err := fl.Add(fmt.Sprintf("r%d", i), now+float64(b%7)); err != nil {
					t.Fatal(err)
				}
				live++
			case b%3 == 1 && live > 1:
				for _, st := range fl.Replicas() {
					if !st.Draining {
						if err := fl.Remove(st.Name); err != nil {
							t.Fatal(err)
						}
						live--
						break
					}
				}
			}
		}
		end := now + 1e6
		fl.Advance(end)
		s := fl.Summarize(1)
		for i, o := range fl.Outcomes() {
			if o.Refused != "" {
				continue
			}
			if o.FirstToken < reqs[i].At || o.Done < o.FirstToken || o.Done > end {
				t.Fatalf("request %d %+v: first token %g, done %g", i, reqs[i], o.FirstToken, o.Done)
			}
		}
		if s.Requests != len(reqs) || s.IdleGPUHours > s.GPUHours+1e-9 || math.IsNaN(s.GPUHours) {
			t.Fatalf("summary %+v for %d requests", s, len(reqs))
		}
	})
}
