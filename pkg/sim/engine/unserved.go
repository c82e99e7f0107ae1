package engine

import (
	"sort"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/bound"
)

// Unserved is the part of the demand the lower bounds count that a run did
// not serve: Job work not done by the end of the run, and Deployment
// replicas that the HPA asked for but that waited for a node. A bound that
// counts work that never ran is lower than what serving it would cost, so
// cost against it flatters the run.
type Unserved struct {
	// PodHours and GPUHours are the unserved demand; Jobs and Deployments
	// split them.
	PodHours, GPUHours               float64
	JobPodHours, JobGPUHours         float64
	ReplicaPodHours, ReplicaGPUHours float64
	// DemandPodHours is the whole demand the bounds count, in pod-hours.
	DemandPodHours float64
}

// Share is the unserved part of the demand, in pod-hours.
func (u Unserved) Share() float64 {
	if u.DemandPodHours <= 0 {
		return 0
	}
	return u.PodHours / u.DemandPodHours
}

// unservedRecorder integrates pending Deployment replicas and keeps the
// waits and the run time evictions cost, exactly.
type unservedRecorder struct {
	pendingReplicas, pendingReplicaGPUs int64
	replicaTime, replicaGPUTime         exactHours
	evictionWait                        time.Duration
	interrupted, interruptedGPU         exactHours
}

func (u *unservedRecorder) integrate(dt time.Duration) {
	u.replicaTime.add(u.pendingReplicas, dt)
	u.replicaGPUTime.add(u.pendingReplicaGPUs, dt)
}

// queued counts a pod joining (+1) or leaving (-1) the queue. A serving
// Deployment's waiting replicas are not unserved demand: the bounds count
// its requests' work, not its replicas.
func (r *recorder) queued(p *simPod, sign int64) {
	if p.w.cfg.Deployment != nil && p.w.serving == nil {
		r.unserved.pendingReplicas += sign
		r.unserved.pendingReplicaGPUs += sign * p.w.gpus
	}
}

// dequeued ends a pod's wait at now: it was bound, or left the queue.
func (r *recorder) dequeued(p *simPod, now time.Duration) {
	d := now - p.queuedAt
	r.waits = append(r.waits, d)
	if p.afterEviction {
		r.unserved.evictionWait += d
		p.afterEviction = false
	}
	r.queued(p, -1)
}

// interrupted notes the run time an evicted Job pod had behind it.
func (r *recorder) interrupted(p *simPod, ran time.Duration) {
	r.unserved.interrupted.add(1, ran)
	r.unserved.interruptedGPU.add(p.w.gpus, ran)
}

// unservedResult fills the unserved demand and the costs of evictions. Job
// work is counted as the bounds count it: from submission for its duration,
// up to the end of the run; what of it was not done by the end never ran.
func (e *Engine) unservedResult(res *Result) {
	u := &e.rec.unserved
	var jobs, jobGPUs exactHours
	for _, p := range e.work.pods {
		if p.duration <= 0 {
			continue
		}
		ideal := min(max(e.end-p.submit, 0), p.duration)
		left := p.remaining
		if p.node != "" && !p.broken { // a pod on broken GPUs does its run again
			left -= e.end - p.boundAt
		}
		if missing := ideal - (p.duration - max(left, 0)); missing > 0 {
			jobs.add(1, missing)
			jobGPUs.add(p.w.gpus, missing)
		}
	}
	res.Unserved = Unserved{
		JobPodHours: jobs.hours(), JobGPUHours: jobGPUs.hours(),
		ReplicaPodHours: u.replicaTime.hours(), ReplicaGPUHours: u.replicaGPUTime.hours(),
		DemandPodHours: demandPodHours(e.rec.podDemand, e.end),
	}
	res.Unserved.PodHours = res.Unserved.JobPodHours + res.Unserved.ReplicaPodHours
	res.Unserved.GPUHours = res.Unserved.JobGPUHours + res.Unserved.ReplicaGPUHours
	res.EvictionWaitHours = u.evictionWait.Hours()
	res.InterruptedHours, res.InterruptedGPUHours = u.interrupted.hours(), u.interruptedGPU.hours()
}

// demandPodHours integrates the pod demand up to end.
func demandPodHours(changes []bound.PodChange, end time.Duration) float64 {
	cs := append([]bound.PodChange(nil), changes...)
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].At < cs[j].At })
	var total exactHours
	var n int64
	last := time.Duration(0)
	for _, c := range cs {
		at := min(c.At, end)
		if at > last {
			total.add(n, at-last)
			last = at
		}
		n += int64(c.Delta)
	}
	if end > last {
		total.add(n, end-last)
	}
	return total.hours()
}
