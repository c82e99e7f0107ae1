// Package forecast predicts an inference workload's demand one lead time
// ahead from the history of the metric its HPA reads, and sizes the warm GPU
// capacity that should wait for the replicas the HPA will ask for next.
//
// It is pure: a history of (time, value) samples and options in, a forecast
// and a buffer size with its reasons out. Shells own the history (the
// simulator the workload's own queue metric, live the HPA's
// status.currentMetrics each loop) and apply the size as a managed
// CapacityBuffer through the one actuator.
//
// The method is Holt's linear smoothing (an exponentially weighted level and
// trend), projected one lead time ahead, plus a headroom: a quantile of the
// errors the same method made on recent history at the same horizon. It is
// small, well understood, needs no training and reacts to a ramp within a few
// samples; its limit is that it cannot see a step before it starts.
package forecast
