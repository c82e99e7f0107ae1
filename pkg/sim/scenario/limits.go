package scenario

import "time"

// Limits on one scenario, listed in docs/refusals.md. They are far above
// the built-in scenarios and the public traces, and low enough that a
// 200-byte file cannot ask for more memory or time than a machine has:
// every node, pod and sample is held in memory.
const (
	// MaxGroupSize bounds a node group's maxSize (and so minSize and
	// initialSize).
	MaxGroupSize = 100_000
	// MaxJobCount bounds the pods of one jobs entry.
	MaxJobCount = 100_000
	// MaxReplicas bounds a Deployment's replicas and its HPA's
	// maxReplicas.
	MaxReplicas = 100_000
	// MinSampleInterval is the shortest sampleInterval: the autoscaler's
	// loop runs every few seconds, so finer samples show nothing more.
	MinSampleInterval = time.Second
	// MaxSamples bounds duration / sampleInterval.
	MaxSamples = 10_000_000
)
