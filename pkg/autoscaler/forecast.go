package autoscaler

import (
	"math"

	"github.com/gpuscale/gpuscale/pkg/capacitybuffer"
	"github.com/gpuscale/gpuscale/pkg/forecast"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Forecast buffers plan an inference workload's pods and nodes together:
// each loop the shell reports the demand the workload's HPA reads
// (Input.Demand); the loop keeps its history, forecasts it one lead time
// ahead (the time from a scale-up to a serving replica on a new node) and
// holds, as a CapacityBuffer of the workload's own pod, the replicas the
// HPA will ask for by then beyond those running. Their placeholders make
// scale-up add warm nodes and keep them from scale-down, as any buffer's;
// when the forecast falls the buffer shrinks and the nodes are left to
// scale-down. The buffer is the core's own: no object is written.

// ForecastBufferPrefix starts the name of a workload's forecast buffer:
// forecast-<workload>.
const ForecastBufferPrefix = "forecast-"

// planBuffers sets the buffers the loop plans with: the shell's resolved
// CapacityBuffers when pod injection is on, then the forecast's.
func (l *loop) planBuffers() error {
	if l.opts.CapacityBuffers.PodInjectionEnabled {
		l.buffers = append(l.buffers, l.in.CapacityBuffers...)
	}
	o := l.opts.Forecast
	if !o.Enabled {
		return nil
	}
	for _, d := range l.demand.Record(l.in.Now, l.in.Demand, o.Keep()) {
		f, err := forecast.Predict(l.demand.Of(d.Key()), o)
		if err != nil {
			return err
		}
		max := o.MaxBuffer
		if max == 0 {
			max = math.MaxInt32
		}
		b, err := forecast.Size(forecast.BufferInput{Forecast: f, PerReplica: d.PerReplica, Running: d.Running, Max: max, MaxReplicas: d.MaxReplicas})
		if err != nil {
			return err
		}
		name := ForecastBufferPrefix + d.Name
		l.forecasts = append(l.forecasts, status.Forecast{Namespace: d.Namespace, Name: d.Name, Buffer: name, Demand: d.Value,
			Forecast: f.Value, ForecastReplicas: b.ForecastReplicas, Running: d.Running, Replicas: b.Replicas, Bound: b.Bound, Message: b.Reason})
		if b.Replicas > 0 {
			l.buffers = append(l.buffers, capacitybuffer.Buffer{Namespace: d.Namespace, Name: name, Replicas: b.Replicas, Template: d.Template})
		}
	}
	return nil
}
