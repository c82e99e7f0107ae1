// Package forecast predicts an inference workload's demand one lead time
// ahead from the history of the metric its HPA reads, and sizes the warm GPU
// capacity that should wait for the replicas the HPA will ask for next.
//
// It is pure: a history of (time, value) samples and options in, a forecast
// and a buffer size with its reasons out. The shells report each loop's
// demand as the HPA's status shows it (DemandOf: the live shell from the
// HPA objects, the simulator from its HPA model); the decision core keeps
// the history (History) and holds the size as a CapacityBuffer of its own
// (pkg/autoscaler, --forecast-buffers, the inference profile).
//
// The method is Holt's linear smoothing (an exponentially weighted level and
// trend), projected one lead time ahead, plus a headroom: a quantile of the
// errors the same method made on recent history at the same horizon. The
// defaults follow the level only and let the headroom cover rises
// (DefaultOptions says why). It is small, well understood, needs no training
// and follows a ramp within a few readings; its limit is that it cannot see
// a step before it starts.
package forecast
