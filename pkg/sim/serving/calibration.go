// Package serving models LLM inference replicas serving requests: prefill
// and decode throughput, concurrency bounded by KV-cache capacity, a queue
// per replica, requests routed to the ready replica with the fewest
// outstanding, and the measures users feel (time to first token, SLO
// attainment) beside what they pay (GPU-hours, idle GPU-hours).
//
// It is pure: time is a number of seconds handed in by the caller, nothing
// reads a clock, and the same requests and calls give the same results.
// docs/inference.md explains the model, its calibration and its limits.
package serving

import (
	"fmt"
	"sort"
	"strings"
)

// GPU is what the calibration needs of an accelerator, from its vendor's
// datasheet.
type GPU struct {
	Name string
	// DenseBF16TFLOPS is the datasheet's dense (not sparse) BF16 tensor
	// throughput, in 10^12 FLOP/s.
	DenseBF16TFLOPS float64
	// MemoryGB is the device memory, in 10^9 bytes.
	MemoryGB float64
	// BandwidthGBps is the memory bandwidth, in 10^9 bytes/s.
	BandwidthGBps float64
}

// Model is what the calibration needs of a model, from its published
// configuration (config.json on the model's card).
type Model struct {
	Name string
	// Params is the parameter count.
	Params float64
	// Layers, KVHeads and HeadDim size the KV cache: each token keeps
	// 2 (key and value) x Layers x KVHeads x HeadDim values.
	Layers, KVHeads, HeadDim int
	// GPUs is the tensor-parallel degree one replica uses.
	GPUs int
}

// Efficiency holds the assumptions that turn datasheet peaks into
// throughput. They are assumptions, not measurements: docs/inference.md
// gives the public figures each was checked against.
type Efficiency struct {
	// PrefillMFU is the share of peak FLOP/s prefill reaches (compute bound).
	PrefillMFU float64
	// DecodeMFU is the share of peak FLOP/s decode reaches at full batch.
	DecodeMFU float64
	// DecodeBandwidth is the share of memory bandwidth one sequence alone
	// reaches while decoding (memory bound: every token reads all weights).
	DecodeBandwidth float64
	// MemoryUtilization is the share of device memory the server takes
	// (vLLM's --gpu-memory-utilization, default 0.9).
	MemoryUtilization float64
	// ReservedGBPerGPU is memory per GPU kept from the KV cache for
	// activations and the CUDA graphs.
	ReservedGBPerGPU float64
}

// DefaultEfficiency is the calibration's assumption set (docs/inference.md).
func DefaultEfficiency() Efficiency {
	return Efficiency{PrefillMFU: 0.5, DecodeMFU: 0.2, DecodeBandwidth: 0.75, MemoryUtilization: 0.9, ReservedGBPerGPU: 2}
}

// bytesPerValue is BF16: the calibration serves weights and KV cache in
// 16-bit floats.
const bytesPerValue = 2

// KnownGPUs are the datasheet figures (dense BF16, memory, bandwidth).
//   - H100 SXM 80GB: 989 TFLOPS, 80 GB, 3,350 GB/s (NVIDIA H100 Tensor Core
//     GPU datasheet, 2023; the 1,979 TFLOPS figure is with sparsity).
//   - A100 SXM 80GB: 312 TFLOPS, 80 GB, 2,039 GB/s (NVIDIA A100 datasheet, 2021).
//   - L4: 121 TFLOPS, 24 GB, 300 GB/s (NVIDIA L4 datasheet, 2023; 242 with sparsity).
func KnownGPUs() []GPU {
	return []GPU{
		{Name: "A100", DenseBF16TFLOPS: 312, MemoryGB: 80, BandwidthGBps: 2039},
		{Name: "H100", DenseBF16TFLOPS: 989, MemoryGB: 80, BandwidthGBps: 3350},
		{Name: "L4", DenseBF16TFLOPS: 121, MemoryGB: 24, BandwidthGBps: 300},
	}
}

// KnownModels are the models' published configurations.
//   - 8B: Llama 3.1 8B (8.03e9 parameters, 32 layers, 8 KV heads of 128;
//     meta-llama/Llama-3.1-8B config.json, July 2024), on one GPU.
//   - 70B: Llama 3.1 70B (70.6e9 parameters, 80 layers, 8 KV heads of 128;
//     meta-llama/Llama-3.1-70B config.json, July 2024), on four GPUs
//     (its 141 GB of BF16 weights do not fit two 80 GB GPUs with room for
//     a KV cache).
func KnownModels() []Model {
	return []Model{
		{Name: "70B", Params: 70.6e9, Layers: 80, KVHeads: 8, HeadDim: 128, GPUs: 4},
		{Name: "8B", Params: 8.03e9, Layers: 32, KVHeads: 8, HeadDim: 128, GPUs: 1},
	}
}

// Profile is one replica's calibrated capacity.
type Profile struct {
	GPU, Model string
	// GPUs one replica holds.
	GPUs int
	// PrefillTokensPerSecond is the replica's prompt throughput.
	PrefillTokensPerSecond float64
	// DecodeTokensPerSecond is the speed of one sequence decoding alone.
	DecodeTokensPerSecond float64
	// BatchDecodeTokensPerSecond is the replica's decode throughput at full
	// batch: n sequences decode at min(DecodeTokensPerSecond, this / n) each.
	BatchDecodeTokensPerSecond float64
	// KVCacheTokens bounds the tokens (prompt and output) of the requests
	// a replica serves at once.
	KVCacheTokens int64
}

// Validate names the first field that cannot serve.
func (p Profile) Validate() error {
	switch {
	case p.GPUs < 1:
		return fmt.Errorf("serving profile %s/%s: gpus must be at least 1, got %d", p.GPU, p.Model, p.GPUs)
	case !(p.PrefillTokensPerSecond > 0):
		return fmt.Errorf("serving profile %s/%s: prefillTokensPerSecond must be positive, got %g", p.GPU, p.Model, p.PrefillTokensPerSecond)
	case !(p.DecodeTokensPerSecond > 0):
		return fmt.Errorf("serving profile %s/%s: decodeTokensPerSecond must be positive, got %g", p.GPU, p.Model, p.DecodeTokensPerSecond)
	case !(p.BatchDecodeTokensPerSecond >= p.DecodeTokensPerSecond):
		return fmt.Errorf("serving profile %s/%s: batchDecodeTokensPerSecond must be at least decodeTokensPerSecond (%g), got %g",
			p.GPU, p.Model, p.DecodeTokensPerSecond, p.BatchDecodeTokensPerSecond)
	case p.KVCacheTokens < 1:
		return fmt.Errorf("serving profile %s/%s: kvCacheTokens must be at least 1, got %d", p.GPU, p.Model, p.KVCacheTokens)
	}
	return nil
}

// Calibrate derives a replica's profile from the datasheet, the model's
// configuration and the efficiency assumptions:
//
//	prefill     = GPUs x TFLOPS x PrefillMFU / (2 x Params)     (2 FLOP per parameter per token)
//	batchDecode = GPUs x TFLOPS x DecodeMFU / (2 x Params)
//	decode      = GPUs x bandwidth x DecodeBandwidth / (2 bytes x Params)
//	kvTokens    = (GPUs x (memory x MemoryUtilization - ReservedGBPerGPU) - 2 bytes x Params)
//	              / (2 x Layers x KVHeads x HeadDim x 2 bytes)
//
// A model that leaves no room for a KV cache on the GPUs is refused.
func Calibrate(g GPU, m Model, e Efficiency) (Profile, error) {
	gpus := float64(m.GPUs)
	weights := bytesPerValue * m.Params
	kvPerToken := float64(2 * m.Layers * m.KVHeads * m.HeadDim * bytesPerValue)
	free := gpus*(g.MemoryGB*e.MemoryUtilization-e.ReservedGBPerGPU)*1e9 - weights
	if free < kvPerToken || kvPerToken <= 0 {
		return Profile{}, fmt.Errorf("serving model %s on %d x %s: its %.0f GB of weights leave no room for a KV cache in %.0f GB",
			m.Name, m.GPUs, g.Name, weights/1e9, gpus*g.MemoryGB)
	}
	p := Profile{
		GPU: g.Name, Model: m.Name, GPUs: m.GPUs,
		PrefillTokensPerSecond:     gpus * g.DenseBF16TFLOPS * 1e12 * e.PrefillMFU / (2 * m.Params),
		BatchDecodeTokensPerSecond: gpus * g.DenseBF16TFLOPS * 1e12 * e.DecodeMFU / (2 * m.Params),
		DecodeTokensPerSecond:      gpus * g.BandwidthGBps * 1e9 * e.DecodeBandwidth / weights,
		KVCacheTokens:              int64(free / kvPerToken),
	}
	return p, p.Validate()
}

// Lookup calibrates a known GPU and model by name ("H100", "8B"); an
// unknown name is refused with the known ones.
func Lookup(gpu, model string) (Profile, error) {
	var g *GPU
	var names []string
	for _, k := range KnownGPUs() {
		names = append(names, k.Name)
		if k.Name == gpu {
			g = &k
		}
	}
	if g == nil {
		return Profile{}, fmt.Errorf("serving gpu %q: not calibrated (known: %s)", gpu, strings.Join(names, ", "))
	}
	names = names[:0]
	for _, k := range KnownModels() {
		names = append(names, k.Name)
		if k.Name == model {
			return Calibrate(*g, k, DefaultEfficiency())
		}
	}
	sort.Strings(names)
	return Profile{}, fmt.Errorf("serving model %q: not calibrated (known: %s)", model, strings.Join(names, ", "))
}
