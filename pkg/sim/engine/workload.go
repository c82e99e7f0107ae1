package engine

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// workloads are the scenario's Deployments, Jobs and gangs, their pods,
// and the DaemonSets as the core sees them.
type workloads struct {
	list    []*workloadState
	pods    map[string]*simPod
	pending []*simPod
	podSeq  int
	jobs    int // Job pods in the scenario
	// gangs are the jobs of several pods; requests those of them with an
	// open ProvisioningRequest, in the order they were opened.
	gangs      []*gangState
	requests   []*gangState
	gangSeq    int
	daemonSets []*appsv1.DaemonSet
}

// workloadState is a Deployment or a set of Jobs.
type workloadState struct {
	cfg *scenario.Workload
	// index is the workload's position in the scenario's workloads.
	index int
	// key is the scheduler's equivalence key: pods of one workload are
	// identical to the filters.
	key string
	// req and gpus are what one pod asks for.
	req  snapshot.Resource
	gpus int64
	// Deployment state: its pods (pending or running), the desired count
	// and the HPA model.
	replicas []*simPod
	desired  int
	hpa      PodAutoscaler
	changes  int
	// serving is the fleet of a serving Deployment (nil otherwise).
	serving *servingState
	view    hpaView
	// steady: the last HPA sync proposed the current replicas; skipped
	// and skippedAt: syncs were skipped since, the last at skippedAt.
	steady    bool
	skipped   bool
	skippedAt time.Duration
	// version changes whenever a pod of the workload is added, removed,
	// bound or unbound.
	version uint64
}

// simPod is one pod and its life.
type simPod struct {
	pi       *snapshot.PodInfo
	w        *workloadState
	submit   time.Duration
	duration time.Duration // 0: runs until deleted
	// remaining is what is left of duration, less after an eviction.
	remaining time.Duration
	node      string
	boundAt   time.Duration
	gen       int
	// waited: the pod has run (been bound) at least once.
	waited bool
	// broken: the GPUs the pod runs on failed at brokenAt; it makes no
	// progress until it leaves the node (gpufailure.go).
	broken   bool
	brokenAt time.Duration
	// queuedAt is when the pod last joined the scheduling queue: at
	// submission, or when an eviction sent it back.
	queuedAt time.Duration
	// afterEviction: the pod waits because of an eviction (a Job pod sent
	// back to the queue, or the replacement of an evicted Deployment pod).
	afterEviction bool
	// hpaPod is the pod as its Deployment's HPA sees it; started backs
	// its start time.
	hpaPod  *v1.Pod
	started metav1.Time
	// gang is the job the pod is one of, when it starts only with the
	// others.
	gang *gangState
}

func (e *Engine) initWorkloads() error {
	for i := range e.sc.Workloads {
		cfg := &e.sc.Workloads[i]
		if err := e.stop.startInterrupted(fmt.Sprintf("workload %s (%d of %d workloads)", cfg.Name, i, len(e.sc.Workloads))); err != nil {
			return err
		}
		w := &workloadState{cfg: cfg, index: i, key: cfg.Namespace + "/" + cfg.Name}
		w.req = snapshot.ResourceFromList(cfg.Pod.Requests)
		w.gpus = gpu.Requested(&w.req)
		e.work.list = append(e.work.list, w)
		if d := cfg.Deployment; d != nil {
			if d.Serving != nil {
				s, err := newServingState(d.Serving)
				if err != nil {
					return servingError(i, err)
				}
				w.serving = s
				e.rec.servingDemand(w)
			}
			if d.HPA != nil {
				h, err := e.opts.NewPodAutoscaler(*d.HPA)
				if err != nil {
					return fmt.Errorf("workloads[%d].deployment.hpa: %w", i, err)
				}
				w.hpa = h
			}
			if err := e.setReplicas(w, d.Replicas); err != nil {
				return err
			}
			w.changes = 0
			continue
		}
		for _, b := range cfg.Jobs {
			if b.Gang > 1 {
				for j := 0; j < b.Count/b.Gang; j++ {
					if err := e.newGang(w, b.Gang, b.At.Duration, b.Duration.Duration); err != nil {
						return err
					}
				}
				continue
			}
			for j := 0; j < b.Count; j++ {
				p, err := e.newPod(w, b.At.Duration, b.Duration.Duration)
				if err != nil {
					return err
				}
				e.work.jobs++
				if e.work.jobs%(64*memoryCheckEvery) == 0 { // a scenario may ask for more pods than fit in memory
					if err := e.stop.overMemory(fmt.Sprintf("workloads[%d] has submitted %d Job pods so far, more than fit", i, e.work.jobs)); err != nil {
						return err
					}
				}
				e.rec.demand(b.At.Duration, b.At.Duration+b.Duration.Duration, w, 1)
				e.events.push(&event{at: b.At.Duration, kind: evSubmit, pod: p})
			}
		}
	}
	return nil
}

func scalarOf(rl v1.ResourceList) map[v1.ResourceName]int64 {
	out := map[v1.ResourceName]int64{}
	for k, q := range rl {
		if gpu.IsGPUResource(k) {
			out[k] = q.Value()
		}
	}
	return out
}

// newPod builds a pod of w submitted at submit.
func (e *Engine) newPod(w *workloadState, submit, duration time.Duration) (*simPod, error) {
	e.work.podSeq++
	name := fmt.Sprintf("%s-%d", w.cfg.Name, e.work.podSeq)
	kind, owner := "Job", w.cfg.Name
	if w.cfg.Deployment != nil {
		kind, owner = "ReplicaSet", w.cfg.Name+"-rs"
	}
	yes := true
	t := w.cfg.Pod
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: w.cfg.Namespace, UID: types.UID(w.cfg.Namespace + "/" + name),
			Labels:            map[string]string{"app": w.cfg.Name},
			CreationTimestamp: metav1.NewTime(clock(submit)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: ownerAPI(kind), Kind: kind, Name: owner,
				UID: types.UID(w.key), Controller: &yes}},
		},
		Spec:   t.Spec(),
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
	pi, err := snapshot.NewPodInfo(pod)
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", w.key, err)
	}
	p := &simPod{pi: pi, w: w, submit: submit, duration: duration, remaining: duration}
	e.work.pods[name] = p
	return p, nil
}

func ownerAPI(kind string) string {
	if kind == "Job" {
		return "batch/v1"
	}
	return "apps/v1"
}

// submit puts a pod in the scheduling queue.
func (e *Engine) submit(p *simPod) {
	e.enqueue(p)
	e.rec.submitted++
	e.touch()
}

// enqueue puts a pod in the scheduling queue and starts its wait.
func (e *Engine) enqueue(p *simPod) {
	p.queuedAt = e.now
	e.work.pending = append(e.work.pending, p)
	e.rec.queued(p, 1)
}

// finish ends a Job pod that ran its course.
func (e *Engine) finish(p *simPod) error {
	if err := e.unbind(p); err != nil {
		return err
	}
	delete(e.work.pods, p.pi.Pod.Name)
	e.rec.finished++
	return nil
}

// unbind takes a pod off its node.
func (e *Engine) unbind(p *simPod) error {
	if err := e.snap.RemovePod(p.pi.Pod.Namespace, p.pi.Pod.Name); err != nil {
		return err
	}
	if err := p.w.servingUnbound(p, e.now); err != nil {
		return err
	}
	p.pi.Pod.Spec.NodeName = ""
	p.node = ""
	p.gen++
	p.w.version++
	e.rec.gpuAllocated -= p.w.gpus
	e.sched.roomGrew()
	e.touch()
	return nil
}

// evict moves a pod off a node being removed: a Job pod goes back to the
// queue with what remained of its run; a Deployment's pod is replaced by a
// new pending one, as its ReplicaSet would.
func (e *Engine) evict(p *simPod) error {
	ran := e.now - p.boundAt
	node := p.node
	e.rec.evictions++
	if p.w.cfg.Deployment != nil {
		// deletePod unbinds the running pod itself: unbound first, it would
		// be taken for a pending one leaving the queue.
		if err := e.deletePod(p); err != nil {
			return err
		}
		r, err := e.addReplica(p.w)
		if err != nil {
			return err
		}
		r.afterEviction = true
		return nil
	}
	if err := e.unbind(p); err != nil {
		return err
	}
	e.rec.interrupted(p, ran)
	if p.broken {
		e.brokenRun(p, ran)
	} else {
		e.lostRun(p, node, ran)
	}
	if p.remaining -= ran; p.remaining <= 0 {
		p.remaining = time.Second
	}
	p.afterEviction = true
	e.enqueue(p)
	return nil
}

// setReplicas makes a Deployment have n pods: new ones are pending; on the
// way down pending pods go first, then the most recently started.
func (e *Engine) setReplicas(w *workloadState, n int) error {
	if n != w.desired {
		w.changes++
		if w.serving == nil { // a serving Deployment's demand is its requests' work
			e.rec.demandStep(e.now, w, n-w.desired)
		}
	}
	w.desired = n
	for len(w.replicas) < n {
		if _, err := e.addReplica(w); err != nil {
			return err
		}
		if len(w.replicas)%(64*memoryCheckEvery) == 0 {
			if err := e.stop.overMemory(fmt.Sprintf("Deployment %s has %d replicas so far, more than fit", w.key, len(w.replicas))); err != nil {
				return err
			}
		}
	}
	if len(w.replicas) > n {
		sort.SliceStable(w.replicas, func(i, j int) bool {
			a, b := w.replicas[i], w.replicas[j]
			if (a.node == "") != (b.node == "") {
				return a.node != ""
			}
			return a.boundAt < b.boundAt
		})
		for len(w.replicas) > n {
			if err := e.deletePod(w.replicas[len(w.replicas)-1]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *Engine) addReplica(w *workloadState) (*simPod, error) {
	p, err := e.newPod(w, e.now, 0)
	if err != nil {
		return nil, err
	}
	p.hpaPod = hpaPod(p)
	w.replicas = append(w.replicas, p)
	w.version++
	e.submit(p)
	return p, nil
}

// deletePod removes a Deployment pod, pending or running.
func (e *Engine) deletePod(p *simPod) error {
	if p.node != "" {
		if err := e.unbind(p); err != nil {
			return err
		}
	} else {
		for i, q := range e.work.pending {
			if q == p {
				e.work.pending = append(e.work.pending[:i], e.work.pending[i+1:]...)
				break
			}
		}
		e.rec.dequeued(p, e.now) // left the queue without running: its wait ends here
	}
	w := p.w
	for i, q := range w.replicas {
		if q == p {
			w.replicas = append(w.replicas[:i], w.replicas[i+1:]...)
			break
		}
	}
	w.version++
	delete(e.work.pods, p.pi.Pod.Name)
	e.touch()
	return nil
}

// load is a Deployment's offered load at now.
func load(l *scenario.LoadCurve, now time.Duration) float64 {
	pts := l.Points
	i := sort.Search(len(pts), func(i int) bool { return pts[i].At.Duration > now }) - 1
	switch {
	case i < 0:
		return 0
	case i == len(pts)-1 || l.Interpolation == "step":
		return pts[i].Value
	}
	a, b := pts[i], pts[i+1]
	f := float64(now-a.At.Duration) / float64(b.At.Duration-a.At.Duration)
	return a.Value + f*(b.Value-a.Value)
}

// withHPA are the Deployments with an HorizontalPodAutoscaler.
func (ws *workloads) withHPA() []*workloadState {
	var out []*workloadState
	for _, w := range ws.list {
		if w.hpa != nil {
			out = append(out, w)
		}
	}
	return out
}

// syncHPAs runs every HPA once, as the controller does each sync period.
func (e *Engine) syncHPAs() error {
	for _, w := range e.work.withHPA() {
		if err := e.syncHPA(w); err != nil {
			return fmt.Errorf("HPA of %s: %w", w.key, err)
		}
	}
	return nil
}

// lastJobEnd is when every Job would have finished with no wait.
func (ws *workloads) lastJobEnd() time.Duration {
	var end time.Duration
	for _, w := range ws.list {
		for _, b := range w.cfg.Jobs {
			end = max(end, b.At.Duration+b.Duration.Duration)
		}
	}
	if end == 0 {
		end = time.Hour
	}
	return end
}
