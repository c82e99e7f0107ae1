package dst

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/gpuscale/gpuscale/pkg/controller"
	"github.com/gpuscale/gpuscale/pkg/limits"
)

// GroupSpec is one simulated node group.
type GroupSpec struct {
	ID         string
	Min, Max   int
	CPUs, GPUs int
}

// WorldOptions shape the simulated cluster.
type WorldOptions struct {
	Groups []GroupSpec
	// MaxNodesTotal and MaxGPUs are the autoscaler's --max-nodes-total and
	// --gpu-total maximum, which the invariants hold it to.
	MaxNodesTotal, MaxGPUs int
	// ProvisionTime is --max-node-provision-time.
	ProvisionTime time.Duration
	// Spread has the scheduler place each pod on the node with the
	// largest share of its CPU free (the kube-scheduler's default scoring,
	// least allocated), ties to the first by name, rather than on the
	// first that fits: pods spread over the nodes leave them underused, so
	// drains with pods to move come often.
	Spread bool
	// StartNodes are the groups of the nodes registered before the run
	// starts, one entry a node.
	StartNodes []string
}

// Options are a run's settings.
type Options struct {
	World WorldOptions
	// ScanInterval is the loop period; TailTicks the loop periods of the
	// quiet tail after the schedule, in which no fault is armed, every
	// kubelet registers and the scheduler runs every period.
	ScanInterval time.Duration
	TailTicks    int
	// PodWaitBound and RemovalBound are the liveness bounds of the quiet
	// tail: a pod the cloud has room for waits at most PodWaitBound of it
	// for a node, and a node stays marked ToBeDeleted at most RemovalBound
	// of it (the longest grace period of the workloads, the eviction
	// retries and the loops around them).
	PodWaitBound, RemovalBound time.Duration
	// UtilizationThreshold is both scale-down utilization thresholds.
	UtilizationThreshold float64
	// Settle bounds, in real time, the wait for the goroutines to settle
	// after a step.
	Settle time.Duration
	// Invariants checked after every step; nil means All().
	Invariants []Invariant
	// Log, when set, receives the controllers' logs.
	Log io.Writer
	// StartWorkloads are AddWorkload steps run, with one scheduler cycle
	// after them, before the first autoscaler starts: with StartNodes, a
	// run begins on a cluster with nodes to drain rather than an empty one.
	StartWorkloads []Step
}

// DefaultOptions are a small GPU cluster with short timers, so that a
// removal or a provisioning timeout fits in a few minutes of virtual time.
func DefaultOptions() Options {
	return Options{
		World: WorldOptions{
			Groups:        []GroupSpec{{ID: "cpu", Max: 4, CPUs: 4}, {ID: "gpu", Max: 4, CPUs: 8, GPUs: 2}},
			MaxNodesTotal: 4, MaxGPUs: 6, ProvisionTime: 3 * time.Minute, Spread: true,
			StartNodes: []string{"cpu", "cpu", "gpu"},
		},
		StartWorkloads: []Step{
			{Kind: StepAddWorkload, Workload: WorkloadPlain, Replicas: 2},
			{Kind: StepAddWorkload, Workload: WorkloadSlowStop, Replicas: 2},
			{Kind: StepAddWorkload, Workload: WorkloadGraceful, Replicas: 1, GPU: true},
		},
		ScanInterval: 10 * time.Second,
		TailTicks:    60,
		PodWaitBound: 6 * time.Minute,
		RemovalBound: 6 * time.Minute,
		// Nodes half used count as underused, so that drains with pods to
		// move come often.
		UtilizationThreshold: 0.75,
		Settle:               20 * time.Second,
	}
}

// controllerOptions are the live shell's options for a run: the
// upstream defaults with shorter timers, no HTTP server, no leader
// election (the harness plays the Lease: the elector reads the real
// clock).
func (o Options) controllerOptions(id string, clk *simClock) controller.Options {
	c := controller.DefaultOptions()
	c.Address = ""
	c.LeaderElection.Enabled = false
	c.Clock = clk
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	c.Logger = slog.New(slog.NewTextHandler(log, nil)).With("instance", id)
	c.ScanInterval = o.ScanInterval
	c.MaxPodEvictionTime = time.Minute
	c.CacheSyncReport = time.Hour
	a := &c.Autoscaler
	a.ScaleDown.UtilizationThreshold = o.UtilizationThreshold
	a.ScaleDown.GPUUtilizationThreshold = o.UtilizationThreshold
	a.ScaleDown.UnneededTime = time.Minute
	a.ScaleDown.UnreadyTime = 2 * time.Minute
	a.ScaleDown.DelayAfterAdd = time.Minute
	a.ScaleDown.DelayAfterFailure = time.Minute
	a.ScaleDown.MaxCloudProviderNodeDeletionTime = time.Minute
	a.ClusterState.MaxNodeProvisionTime = o.World.ProvisionTime
	a.ClusterState.MaxNodeStartupTime = o.World.ProvisionTime
	a.ClusterState.UnregisteredNodeRemovalTime = o.World.ProvisionTime
	a.ClusterState.Backoff.Initial = time.Minute
	a.ClusterState.Backoff.Max = 2 * time.Minute
	a.Limits = limits.Default()
	a.Limits.MaxNodesTotal = o.World.MaxNodesTotal
	a.Limits.GPUs = map[string]limits.Range{"nvidia.com/gpu": {Min: 0, Max: int64(o.World.MaxGPUs)}}
	return c
}

// Result is what one run did.
type Result struct {
	Seed  uint64
	Steps []Step
	// Ran counts the steps run (fewer than len(Steps) when a violation
	// stopped the run).
	Ran        int
	Violations []Violation
	// Trace is one line per step: the step and a digest of the cluster
	// after it; two runs of one schedule give the same trace.
	Trace   []string
	Faults  map[FaultKind]int
	Checks  int
	History *History
}

// Failed reports a violation.
func (r Result) Failed() bool { return len(r.Violations) > 0 }

// process is one autoscaler process.
type process struct {
	id     string
	cancel context.CancelFunc
	done   chan error
	// stuck marks a process that did not stop when killed: not waited
	// for again.
	stuck bool
}

type run struct {
	o       Options
	clock   *simClock
	hist    *History
	world   *World
	cloud   *Cloud
	q       quiescence
	leader  *process
	old     []*process
	serial  int
	started time.Time
	loads   []string
	res     Result
	// quiet marks the quiet tail; waitingSince and markedSince time its
	// liveness bounds (observe.go).
	quiet                     bool
	waitingSince, markedSince map[string]time.Time
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Run runs a schedule against the live shell and checks the invariants
// after every step.
func Run(seed uint64, steps []Step, o Options) Result {
	if o.Invariants == nil {
		o.Invariants = All()
	}
	// One processor: the goroutines run one at a time, so an idle look
	// sees every goroutine at rest rather than one mid-step on another
	// processor (two runs of a seed parted 4 times in 100 on two, once in
	// 300 on one), and a yield hands the processor to the work waiting.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	clk := newSimClock(epoch)
	h := &History{}
	w := newWorld(clk, h)
	w.spread = o.World.Spread
	r := &run{o: o, clock: clk, hist: h, world: w, cloud: newCloud(w, o.World), q: quiescence{Timeout: o.Settle},
		res: Result{Seed: seed, Steps: steps, History: h}, waitingSince: map[string]time.Time{}, markedSince: map[string]time.Time{}}
	defer r.stop()
	r.warm()
	r.start()
	if r.settle(-1) {
		return r.res
	}
	for i, s := range steps {
		w.setStep(i)
		stuck := r.apply(s)
		r.res.Ran = i + 1
		if stuck || r.settle(i) || r.check(i, s.String(), false) {
			return r.finish()
		}
	}
	w.faults.clear()
	r.quiet = true
	w.disarmCrash()
	w.disarmTakeover()
	w.gates.openAll()
	for k := range o.TailTicks {
		i := len(steps) + k
		w.setStep(i)
		r.cloud.registerAll()
		w.endTerminations()
		w.schedule()
		if r.settle(i) || r.advance(i, o.ScanInterval) || r.check(i, "Tail", k == o.TailTicks-1) {
			return r.finish()
		}
	}
	return r.finish()
}

func (r *run) finish() Result {
	r.res.Faults = r.world.faults.counts()
	return r.res
}

// settle waits for quiescence; a run that does not settle is a finding.
// A leader that a crash killed as it tainted a node (StepKillAfterTaint)
// is replaced by a fresh process then, and one whose drain began to wait
// for a pod to terminate (StepTakeoverWhileDraining) loses the Lease to a
// second replica; the goroutines settle again.
func (r *run) settle(step int) bool {
	if err := r.q.wait(); err != nil {
		r.res.Violations = append(r.res.Violations, Violation{Invariant: "Settles", Step: step, Detail: err.Error()})
		return true
	}
	if id := r.world.takeCrashed(); id != "" && id == r.leader.id {
		return r.restart() || r.settle(step)
	}
	if id := r.world.takeWaiting(); id != "" && id == r.leader.id {
		r.takeover()
		return r.settle(step)
	}
	return false
}

// restart kills the leading process and starts a fresh one on the same
// API server and cloud; true when the old one did not stop.
func (r *run) restart() bool {
	p := r.leader
	r.world.kill(p.id)
	p.cancel()
	select {
	case <-p.done:
	case <-time.After(r.o.Settle):
		p.stuck = true
		r.res.Violations = append(r.res.Violations, Violation{Invariant: "Settles", Step: r.world.currentStep(),
			Detail: fmt.Sprintf("%s did not stop within %s of its context ending", p.id, r.o.Settle)})
		return true
	}
	r.start()
	return false
}

// advance moves the clock by d, one due waiter at a time, settling after
// each; true when the goroutines did not settle.
func (r *run) advance(step int, d time.Duration) bool {
	until := r.clock.Now().Add(d)
	for r.clock.fireNext(until) {
		if r.settle(step) {
			return true
		}
	}
	return false
}

// warm builds the cluster a run starts from, before any autoscaler runs:
// the start nodes, registered, and the start workloads bound to them.
func (r *run) warm() {
	for _, g := range r.o.World.StartNodes {
		r.cloud.addRegistered(g)
	}
	for _, s := range r.o.StartWorkloads {
		r.apply(s)
	}
	if len(r.o.StartWorkloads) > 0 {
		r.world.schedule()
	}
}

// start starts a fresh autoscaler process that leads at once.
func (r *run) start() {
	r.serial++
	id := fmt.Sprintf("autoscaler-%d", r.serial)
	client := r.world.client(id)
	c, err := controller.New(client, r.cloud.view(id), r.o.controllerOptions(id, r.clock))
	if err != nil {
		panic(fmt.Sprintf("controller.New: %v", err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &process{id: id, cancel: cancel, done: make(chan error, 1)}
	// A process that starts while the pod watch is held lists the pods
	// as they are now: that is what its cache shows until the release.
	w := r.world
	if shut, _ := w.gates.state("pods"); shut {
		w.holdPods()
	}
	go func() { p.done <- c.Run(ctx) }()
	r.leader = p
	r.started = r.clock.Now()
	r.hist.add(Event{Step: r.world.currentStep(), At: r.clock.Now(), Instance: id, Kind: EventLeading})
}

// stop ends every process still running.
func (r *run) stop() {
	for _, p := range append(r.old, r.leader) {
		if p != nil {
			r.world.kill(p.id)
			p.cancel()
		}
	}
	// One wait for all: a process that ignores its context (a planted
	// bug) costs the run one Settle, not one per process.
	deadline := time.After(r.o.Settle)
	for _, p := range append(r.old, r.leader) {
		if p != nil && !p.stuck {
			select {
			case <-p.done:
			case <-deadline:
				return
			}
		}
	}
}

// apply runs one step; true when the goroutines did not settle.
func (r *run) apply(s Step) bool {
	w := r.world
	switch s.Kind {
	case StepTick:
		w.endTerminations()
		return r.advance(w.currentStep(), s.Dur)
	case StepSchedule:
		w.schedule()
	case StepRegister:
		r.cloud.register(s.Pick)
	case StepLoseKubelet:
		r.cloud.loseKubelet(s.Pick)
	case StepAddWorkload:
		name := fmt.Sprintf("w%d", len(r.loads)+1)
		r.loads = append(r.loads, name)
		w.addWorkload(name, s.Workload, s.Replicas, s.GPU)
	case StepDeleteWorkload:
		if len(r.loads) > 0 {
			w.deleteWorkload(r.loads[s.Pick%len(r.loads)])
		}
	case StepFinishPod:
		w.finishPod(s.Pick)
	case StepProtectPod:
		w.protectPod(s.Pick)
	case StepFault:
		// Faults that concurrent drains could meet are aimed at one
		// object, so that which drain meets one does not depend on how
		// the goroutines interleave.
		f := s.Fault
		switch f.Target {
		case "nodes", "DeleteNodes":
			nodes := w.nodes()
			if len(nodes) == 0 {
				return false
			}
			f.Object = nodes[s.Pick%len(nodes)].Name
		case "pods/eviction":
			pods := w.runningPods()
			if len(pods) == 0 {
				return false
			}
			f.Object = pods[s.Pick%len(pods)].Name
		}
		w.faults.arm(f)
	case StepKill:
		return r.restart()
	case StepKillAfterTaint:
		w.armCrash()
	case StepHoldWatch:
		if s.Resource == "pods" {
			w.holdPods()
		}
		w.gates.set(s.Resource, true)
	case StepReleaseWatch:
		w.gates.set(s.Resource, false)
	case StepTakeover:
		r.takeover()
	case StepTakeoverWhileDraining:
		w.armTakeover()
	}
	return false
}

// takeover has a second replica take the Lease: the leader's context
// ends, and a fresh process leads at once.
func (r *run) takeover() {
	p := r.leader
	r.world.depose(p.id)
	p.cancel()
	r.old = append(r.old, p)
	r.start()
}
