package engine

import (
	"math/bits"
	"sort"
	"time"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/sim/bound"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Result is what a run measured.
type Result struct {
	Scenario string
	Label    string
	// Duration is the virtual time simulated.
	Duration time.Duration
	Groups   []GroupResult
	// Cost and NodeHours sum the groups; a node is billed from its
	// scale-up request to its removal.
	Cost, NodeHours float64
	// GPUHoursAllocated is the integral of GPUs requested by running pods;
	// GPUHoursProvisioned that of GPUs in billed nodes.
	GPUHoursAllocated, GPUHoursProvisioned float64
	// Waits are every wait of every pod, sorted: from submission, or from
	// the eviction that sent it back to the queue, to the binding that
	// ended it; a wait still open when the pod left the queue unbound or
	// the run ended counts until then.
	Waits []time.Duration
	// Unscheduled is how many pods were still waiting at the end without
	// ever having run; PendingAtEnd counts every pod waiting at the end,
	// evicted ones included.
	Unscheduled  int
	PendingAtEnd int
	// Unserved is the demand the lower bounds count that never ran.
	Unserved Unserved
	// EvictionWaitHours is the pod-hours evicted pods (and the replacements
	// of evicted Deployment pods) spent waiting to run again;
	// InterruptedHours is the run time evicted Job pods had behind them,
	// in pod-hours and GPU-hours. The simulator resumes an evicted Job
	// where it stopped (as if it checkpointed); a Job that restarts from
	// scratch loses that time.
	EvictionWaitHours                     float64
	InterruptedHours, InterruptedGPUHours float64
	// LimitsReached are the limits (a group's max size, --max-nodes-total,
	// --cores-total, --memory-total, --gpu-total) that were reached while
	// pods that a group so limited could run were waiting.
	LimitsReached []LimitHit
	Submitted     int
	Finished      int
	// ScaleUps are scale-up actions (one per group per loop), NodesAdded
	// and NodesRemoved the nodes they and scale-down moved.
	ScaleUps, NodesAdded, NodesRemoved, Evictions int
	// HPAChanges counts changes of a Deployment's replicas by its HPA.
	HPAChanges int
	// Loops is how many times the autoscaler's loop ran.
	Loops int
	// Gangs account for the jobs of several pods that start together.
	Gangs GangResult
	// Consolidation is what consolidation did, or why it did nothing.
	Consolidation ConsolidationResult
	// Interruptions are what the cloud's interruptions cost.
	Interruptions InterruptionResult
	// GPUFailures are what broken GPUs cost.
	GPUFailures GPUFailureResult
	// CapacityEnds are what the ends of capacity blocks and queued runs
	// cost; QueuedRequests counts the requests made for queued capacity.
	CapacityEnds   CapacityEndResult
	QueuedRequests int
	Series         Series
	// Serving measures each serving Deployment, in scenario order.
	Serving []ServingResult
	// Demand is the demand the lower bound packs: Jobs from submission for
	// their duration, Deployments at the replicas their HPA asked for.
	Demand []bound.Change
	// PodDemand is the same demand in pods: one change per entry of
	// Demand, in the same order, its Class the index of the workload in
	// the scenario's Workloads.
	PodDemand []bound.PodChange
	// Shapes are the node groups as the bound sees them.
	Shapes []bound.Shape
	// Stopped says why the run ended before its end (interrupted, or over
	// its memory bound); the result then covers 0 to Duration only.
	Stopped string
}

// GroupResult is one node group's account.
type GroupResult struct {
	ID           string
	InstanceType string
	PricePerHour float64
	NodeHours    float64
	Cost         float64
	PeakNodes    int
	Added        int
	Removed      int
}

// Series is the time series sampled every SampleInterval.
type Series struct {
	Times []time.Duration
	// Groups name the columns of Nodes (billed nodes per group).
	Groups []string
	Nodes  [][]int
	// Pending are pods waiting for a node.
	Pending []int
	// GPUsAllocated and GPUsProvisioned are GPUs requested by running pods
	// and GPUs in billed nodes.
	GPUsAllocated, GPUsProvisioned []int64
	// Deployments name the columns of Replicas (desired replicas).
	Deployments []string
	Replicas    [][]int
	// Cost is the cost so far.
	Cost []float64
	// Serving names the serving Deployments, the columns of Waiting
	// (requests without a first token, at the router or a replica) and
	// Serving Ready (replicas serving).
	Serving      []string
	Waiting      [][]int
	ServingReady [][]int
}

// WaitPercentile returns the p-th percentile (0..100) of Waits, nearest rank.
func (r *Result) WaitPercentile(p float64) time.Duration {
	if len(r.Waits) == 0 {
		return 0
	}
	i := int(p/100*float64(len(r.Waits))+0.999999) - 1
	i = max(0, min(i, len(r.Waits)-1))
	return r.Waits[i]
}

// recorder integrates costs and GPU-hours between points of time and keeps
// the counters and the series.
type recorder struct {
	last time.Duration
	// Integrals are kept exact, so a run's figures do not depend on how
	// time was cut into steps.
	nodeTime []exactHours
	// billedTime is what each group is billed for: its nodes, or its
	// reserved nodes when fewer run (a reservation is paid either way).
	billedTime   []exactHours
	gpuAllocTime exactHours
	gpuProvTime  exactHours
	gpuAllocated int64
	waits        []time.Duration
	// gangWaits are the waits of jobs of several pods, from arrival until
	// all their pods ran; gangRequests and gangRequeues count the
	// ProvisioningRequests they opened, and those opened again after a
	// booking ran out or a request failed.
	gangWaits                  []time.Duration
	gangRequests, gangRequeues int
	submitted                  int
	finished                   int
	scaleUps                   int
	scaleDowns                 int
	evictions                  int
	loops                      int
	series                     Series
	demandList                 []bound.Change
	podDemand                  []bound.PodChange
	unserved                   unservedRecorder
	limits                     limitWatch
	consolidation              ConsolidationResult
	// interruptions counts nodes the cloud interrupted, reclaimedNodes
	// those still there at the end of their notice; lostHours and
	// lostGPUHours are the Job runs interruptions cost (interruptions.go).
	interruptions, reclaimedNodes int
	lostHours, lostGPUHours       float64
	// endReclaimed counts nodes taken back at the end of their capacity
	// block or run, endLost and endLostGPU the Job runs lost near those
	// ends; queuedRequests the queued requests made (capacityend.go,
	// queued.go).
	endReclaimed, queuedRequests int
	endLost, endLostGPU          float64
	// brokenNodes counts nodes whose GPUs failed; brokenLost and
	// brokenLostGPU are the Job runs lost on them, brokenStalled and
	// brokenStalledGPU the time Job pods sat on them (gpufailure.go).
	brokenNodes                     int
	brokenLost, brokenLostGPU       exactHours
	brokenStalled, brokenStalledGPU exactHours
}

// init sizes the recorder for the cloud's groups and names the series.
func (r *recorder) init(cl *cloud, ws *workloads) {
	r.nodeTime = make([]exactHours, len(cl.groups))
	r.billedTime = make([]exactHours, len(cl.groups))
	for _, g := range cl.groups {
		r.series.Groups = append(r.series.Groups, g.cfg.Name)
	}
	for _, w := range ws.list {
		if w.cfg.Deployment != nil {
			r.series.Deployments = append(r.series.Deployments, w.key)
		}
		if w.serving != nil {
			r.series.Serving = append(r.series.Serving, w.key)
		}
	}
}

// integrate adds the node-hours and GPU-hours of the current state from the
// last point of time up to t.
func (e *Engine) integrate(t time.Duration) {
	r := &e.rec
	if t <= r.last {
		return
	}
	dt := t - r.last
	var gpus int64
	for i, g := range e.cloud.groups {
		r.nodeTime[i].add(int64(g.target), dt)
		r.billedTime[i].add(int64(max(g.target, g.reserved)), dt)
		gpus += int64(g.target) * g.gpus
	}
	r.gpuProvTime.add(gpus, dt)
	r.gpuAllocTime.add(r.gpuAllocated, dt)
	r.unserved.integrate(dt)
	e.watchLimits(dt)
	r.last = t
}

// cost is what the groups' nodes cost so far.
func (r *recorder) cost(groups []*groupState) float64 {
	c := 0.0
	for i, g := range groups {
		c += r.billedTime[i].hours() * g.cfg.PricePerHour
	}
	return c
}

// exactHours is a sum of count x duration without rounding: whole hours
// and the nanoseconds left over.
type exactHours struct{ h, ns int64 }

func (x *exactHours) add(n int64, d time.Duration) {
	if n < 0 || d < 0 {
		x.h += n * int64(d/time.Hour)
		x.ns += n * int64(d%time.Hour)
	} else {
		// n x the part-hour is taken in 128 bits: a million GPUs for half
		// an hour is 1.8e21 GPU-nanoseconds, past an int64.
		hi, lo := bits.Mul64(uint64(n), uint64(d%time.Hour))
		q, r := bits.Div64(hi, lo, uint64(time.Hour)) // hi < time.Hour, as n < 2^63
		x.h += n*int64(d/time.Hour) + int64(q)
		x.ns += int64(r)
	}
	x.h += x.ns / int64(time.Hour)
	x.ns %= int64(time.Hour)
}

func (x exactHours) hours() float64 { return float64(x.h) + float64(x.ns)/float64(time.Hour) }

// demand adds a Job pod's ideal run to the bound's demand.
func (r *recorder) demand(from, to time.Duration, w *workloadState, n int) {
	amt := amountOf(&w.req)
	r.demandList = append(r.demandList, bound.Change{At: from, Delta: amt.Scale(float64(n))},
		bound.Change{At: to, Delta: amt.Scale(-float64(n))})
	r.podDemand = append(r.podDemand, bound.PodChange{At: from, Class: w.index, Delta: n},
		bound.PodChange{At: to, Class: w.index, Delta: -n})
}

// demandStep adds a change of a Deployment's replicas.
func (r *recorder) demandStep(at time.Duration, w *workloadState, delta int) {
	r.demandList = append(r.demandList, bound.Change{At: at, Delta: amountOf(&w.req).Scale(float64(delta))})
	r.podDemand = append(r.podDemand, bound.PodChange{At: at, Class: w.index, Delta: delta})
}

func amountOf(req *snapshot.Resource) bound.Amount {
	return bound.Amount{CPU: float64(req.MilliCPU) / 1000, MemoryGiB: float64(req.Memory) / (1 << 30),
		GPUs: float64(gpu.Requested(req))}
}

// sample appends the state at now to the series.
func (r *recorder) sample(now time.Duration, cl *cloud, ws *workloads) {
	s := &r.series
	s.Times = append(s.Times, now)
	nodes := make([]int, len(cl.groups))
	var prov int64
	for i, g := range cl.groups {
		nodes[i] = g.target
		prov += int64(g.target) * g.gpus
	}
	s.Nodes = append(s.Nodes, nodes)
	s.Pending = append(s.Pending, len(ws.pending))
	s.GPUsAllocated = append(s.GPUsAllocated, r.gpuAllocated)
	s.GPUsProvisioned = append(s.GPUsProvisioned, prov)
	var reps []int
	for _, w := range ws.list {
		if w.cfg.Deployment != nil {
			reps = append(reps, w.desired)
		}
	}
	s.Replicas = append(s.Replicas, reps)
	if len(s.Serving) > 0 {
		waiting, ready := ws.servingSample(now)
		s.Waiting, s.ServingReady = append(s.Waiting, waiting), append(s.ServingReady, ready)
	}
	s.Cost = append(s.Cost, r.cost(cl.groups))
}

func (e *Engine) result() *Result {
	r := &e.rec
	res := &Result{
		Scenario: e.sc.Name, Label: e.opts.Label, Duration: e.end,
		GPUHoursAllocated: r.gpuAllocTime.hours(), GPUHoursProvisioned: r.gpuProvTime.hours(),
		Submitted: r.submitted, Finished: r.finished, ScaleUps: r.scaleUps, NodesRemoved: r.scaleDowns,
		Evictions: r.evictions, Loops: r.loops, Series: r.series, Consolidation: r.consolidation,
		Interruptions: InterruptionResult{Nodes: r.interruptions, Reclaimed: r.reclaimedNodes,
			LostPodHours: r.lostHours, LostGPUHours: r.lostGPUHours},
		GPUFailures:    e.gpuFailureResult(),
		CapacityEnds:   CapacityEndResult{Reclaimed: r.endReclaimed, LostPodHours: r.endLost, LostGPUHours: r.endLostGPU},
		QueuedRequests: r.queuedRequests,
	}
	for i, g := range e.cloud.groups {
		gr := GroupResult{ID: g.cfg.Name, InstanceType: g.cfg.InstanceType, PricePerHour: g.cfg.PricePerHour,
			NodeHours: r.nodeTime[i].hours(), PeakNodes: g.peakNodes, Added: g.added, Removed: g.removed}
		gr.Cost = r.billedTime[i].hours() * gr.PricePerHour
		res.Groups = append(res.Groups, gr)
		res.NodeHours += gr.NodeHours
		res.Cost += gr.Cost
		res.NodesAdded += g.added
		res.Shapes = append(res.Shapes, bound.Shape{Name: g.cfg.Name, PricePerHour: g.cfg.PricePerHour,
			Capacity: amountOf(&snapshot.Resource{MilliCPU: g.template.Status.Allocatable.Cpu().MilliValue(),
				Memory: g.template.Status.Allocatable.Memory().Value(), Scalar: scalarOf(g.template.Status.Allocatable)})})
	}
	waits := append([]time.Duration(nil), r.waits...)
	for _, p := range e.work.pending {
		waits = append(waits, e.end-p.queuedAt)
		if p.afterEviction {
			r.unserved.evictionWait += e.end - p.queuedAt
		}
		if !p.waited {
			res.Unscheduled++
		}
	}
	res.PendingAtEnd = len(e.work.pending)
	e.gangResult(res)
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	res.Waits = waits
	e.unservedResult(res)
	res.LimitsReached = r.limits.result()
	for _, w := range e.work.list {
		res.HPAChanges += w.changes
	}
	res.Serving = e.work.servingResults(e.end)
	res.Demand = append([]bound.Change(nil), r.demandList...)
	res.PodDemand = append([]bound.PodChange(nil), r.podDemand...)
	return res
}
