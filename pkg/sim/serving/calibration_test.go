package serving

import (
	"math"
	"strings"
	"testing"
)

// Llama 3.1 8B on one H100, by hand from the datasheet, the model's
// configuration and the efficiency assumptions.
func TestCalibrateH100With8B(t *testing.T) {
	p, err := Lookup("H100", "8B")
	if err != nil {
		t.Fatal(err)
	}
	flops := 989e12 // dense BF16
	weights := 2 * 8.03e9
	kvPerToken := 2.0 * 32 * 8 * 128 * 2 // 131,072 bytes
	want := Profile{GPU: "H100", Model: "8B", GPUs: 1,
		PrefillTokensPerSecond:     flops * 0.5 / weights,
		BatchDecodeTokensPerSecond: flops * 0.2 / weights,
		DecodeTokensPerSecond:      3350e9 * 0.75 / weights,
		KVCacheTokens:              int64((80e9*0.9 - 2e9 - weights) / kvPerToken),
	}
	if p != want {
		t.Errorf("H100/8B = %+v, want %+v", p, want)
	}
	// Sanity against the published orders of magnitude (docs/inference.md):
	// about 30,000 prompt tokens/s, 150 tokens/s for one sequence, about
	// 12,000 at full batch, some 400,000 tokens of KV cache.
	if math.Abs(p.PrefillTokensPerSecond-30791) > 1 || math.Abs(p.DecodeTokensPerSecond-156.4) > 0.1 ||
		math.Abs(p.BatchDecodeTokensPerSecond-12316) > 1 || p.KVCacheTokens != 411529 {
		t.Errorf("H100/8B = %+v", p)
	}
}

// A 70B replica takes four GPUs and so four times one GPU's throughput.
func TestCalibrate70BUsesFourGPUs(t *testing.T) {
	p, err := Lookup("A100", "70B")
	if err != nil {
		t.Fatal(err)
	}
	if want := 4 * 312e12 * 0.5 / (2 * 70.6e9); p.GPUs != 4 || math.Abs(p.PrefillTokensPerSecond-want) > 1e-6 {
		t.Errorf("A100/70B: %d GPUs, prefill %g; want 4 and %g", p.GPUs, p.PrefillTokensPerSecond, want)
	}
}

func TestCalibrateRefuses(t *testing.T) {
	for _, c := range []struct{ gpu, model, want string }{
		{"L4", "70B", "serving model 70B on 4 x L4: its 141 GB of weights leave no room for a KV cache in 96 GB"},
		{"V100", "8B", `serving gpu "V100": not calibrated (known: A100, H100, L4)`},
		{"H100", "405B", `serving model "405B": not calibrated (known: 70B, 8B)`},
	} {
		if _, err := Lookup(c.gpu, c.model); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s/%s: %v, want %q", c.gpu, c.model, err, c.want)
		}
	}
}

// Every known pair calibrates but 70B on L4.
func TestEveryKnownPairCalibrates(t *testing.T) {
	for _, g := range KnownGPUs() {
		for _, m := range KnownModels() {
			_, err := Calibrate(g, m, DefaultEfficiency())
			if (err != nil) != (g.Name == "L4" && m.Name == "70B") {
				t.Errorf("%s/%s: %v", g.Name, m.Name, err)
			}
		}
	}
}
