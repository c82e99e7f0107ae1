package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/gpuscale/gpuscale/pkg/hpa"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
	"github.com/gpuscale/gpuscale/pkg/sim/serving"
)

// ServingResult is what a serving Deployment's users felt and what its
// replicas cost (docs/inference.md).
type ServingResult struct {
	Workload string
	GPU      string
	Model    string
	serving.Summary
	// WorkGPUHours is the GPU time the requests need at the calibrated
	// throughput: no policy serves them with less.
	WorkGPUHours float64
}

// servingState is a serving Deployment's fleet and what its HPA last read.
type servingState struct {
	fleet *serving.Fleet
	cfg   *scenario.Serving
	// busy and busyAt are each pod's busy seconds at the last HPA sync
	// and when that was: a GPU-utilization sample is the growth since.
	busy   map[string]float64
	busyAt map[string]float64
}

func newServingState(cfg *scenario.Serving) (*servingState, error) {
	p, err := cfg.Profile()
	if err != nil {
		return nil, err
	}
	f, err := serving.NewFleet(p, cfg.ServingRequests())
	if err != nil {
		return nil, err
	}
	return &servingState{fleet: f, cfg: cfg, busy: map[string]float64{}, busyAt: map[string]float64{}}, nil
}

// servingDemandBucket is the step of a serving Deployment's demand for
// the lower bounds.
const servingDemandBucket = time.Minute

// servingDemand is what the lower bounds count for a serving Deployment:
// the replicas its requests' work fills minute by minute
// (serving.WorkReplicas), not the replicas an HPA asked for, which would
// make any policy look close to the bound.
func (r *recorder) servingDemand(w *workloadState) {
	s := w.serving
	steps := serving.WorkReplicas(s.fleet.Profile(), s.cfg.ServingRequests(), servingDemandBucket.Seconds())
	prev := 0
	for i, n := range append(steps, 0) { // back to 0 after the last
		if n != prev {
			r.demandStep(time.Duration(i)*servingDemandBucket, w, n-prev)
			prev = n
		}
	}
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// servingBound starts a replica when its pod is bound: it takes the GPUs
// now and serves once Ready (the model loaded, readyAfter later).
func (w *workloadState) servingBound(p *simPod, now time.Duration) error {
	s := w.serving
	if s == nil {
		return nil
	}
	s.fleet.Advance(seconds(now))
	name, ready := p.pi.Pod.Name, seconds(now+w.cfg.Deployment.ReadyAfter.Duration)
	s.busy[name], s.busyAt[name] = 0, ready
	return s.fleet.Add(name, ready)
}

// servingUnbound drains the replica of a pod taken off its node.
func (w *workloadState) servingUnbound(p *simPod, now time.Duration) error {
	s := w.serving
	if s == nil {
		return nil
	}
	s.fleet.Advance(seconds(now))
	delete(s.busy, p.pi.Pod.Name)
	delete(s.busyAt, p.pi.Pod.Name)
	return s.fleet.Remove(p.pi.Pod.Name)
}

// servingMetrics is what each Ready pod of a serving Deployment reports
// now, in milli-units: its requests without a first token, or the percent
// of the time since the last sync its GPU was busy. (Requests wait at the
// router only while no replica is Ready, when no pod reports at all.)
func (w *workloadState) servingMetrics(at time.Duration, metric map[string]hpa.PodMetric) {
	s := w.serving
	now := seconds(at)
	s.fleet.Advance(now)
	states := s.fleet.Replicas()
	name := scenario.QueueDepthMetric
	if h := w.cfg.Deployment.HPA; h != nil && len(h.Metrics) > 0 && h.Metrics[0].Pods != nil {
		name = h.Metrics[0].Pods.Metric.Name
	}
	for _, st := range states {
		if !st.Ready {
			continue
		}
		if _, ok := metric[st.Name]; !ok {
			continue // the HPA does not see it Ready yet
		}
		var v float64
		switch name {
		case scenario.GPUUtilizationMetric:
			if span := now - s.busyAt[st.Name]; span > 0 {
				v = math.Min(100, 100*(st.BusySeconds-s.busy[st.Name])/span)
			}
			s.busy[st.Name], s.busyAt[st.Name] = st.BusySeconds, now
		default:
			v = float64(st.Waiting)
		}
		metric[st.Name] = hpa.PodMetric{Value: int64(math.Round(v * 1000))}
	}
}

// inFlight is the requests held at the router, waiting and running at
// now: what scenario.InFlightMetric reads.
func (s *servingState) inFlight(now time.Duration) int {
	s.fleet.Advance(seconds(now))
	n := s.fleet.Held()
	for _, st := range s.fleet.Replicas() {
		n += st.Waiting + st.Running
	}
	return n
}

// waiting is the requests without a first token at now, at the router
// and in the replicas' queues.
func (s *servingState) waiting(now time.Duration) int {
	s.fleet.Advance(seconds(now))
	n := s.fleet.Held()
	for _, st := range s.fleet.Replicas() {
		n += st.Waiting
	}
	return n
}

// servingSample counts, for each serving Deployment, its requests without
// a first token and its replicas serving (Ready, not draining).
func (ws *workloads) servingSample(now time.Duration) (waiting, ready []int) {
	for _, w := range ws.list {
		s := w.serving
		if s == nil {
			continue
		}
		n, r := s.waiting(now), 0
		for _, st := range s.fleet.Replicas() {
			if st.Ready && !st.Draining {
				r++
			}
		}
		waiting, ready = append(waiting, n), append(ready, r)
	}
	return waiting, ready
}

// servingResults measure every serving Deployment at the end of the run.
func (ws *workloads) servingResults(end time.Duration) []ServingResult {
	var out []ServingResult
	for _, w := range ws.list {
		s := w.serving
		if s == nil {
			continue
		}
		s.fleet.Advance(seconds(end))
		p := s.fleet.Profile()
		out = append(out, ServingResult{
			Workload: w.key, GPU: p.GPU, Model: p.Model,
			Summary:      s.fleet.Summarize(s.cfg.SLO.Seconds()),
			WorkGPUHours: serving.WorkGPUSeconds(p, arrivedBy(s.cfg.ServingRequests(), seconds(end))) / 3600,
		})
	}
	return out
}

// arrivedBy are the requests that arrive by t.
func arrivedBy(reqs []serving.Request, t float64) []serving.Request {
	n := 0
	for n < len(reqs) && reqs[n].At <= t {
		n++
	}
	return reqs[:n]
}

func servingError(i int, err error) error {
	return fmt.Errorf("workloads[%d].deployment.serving: %w", i, err)
}
