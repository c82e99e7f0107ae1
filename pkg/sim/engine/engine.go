// Package engine runs a scenario in virtual time: a discrete-event clock
// drives an in-memory cluster (node groups whose new nodes register after a
// provisioning delay and advertise their GPUs after a device-plugin delay), a
// model of kube-scheduler placement (pkg/predicates filters, NodeResourcesFit
// scoring), the real node autoscaler (pkg/autoscaler, one RunOnce per scan
// interval), Job pods that finish after their duration, and Deployments whose
// HorizontalPodAutoscaler reads a per-pod utilization derived from a load
// curve.
//
// Nothing reads the wall clock and every choice comes from the scenario's
// seed, so the same input gives the same result. Loops in which nothing can
// change are skipped: when the cluster is unchanged since a loop that did
// nothing, the next loop runs at the first scan tick at which a timer of the
// core can fire (an unneeded node's wait, a cooldown, a backoff, a
// provisioning timeout). Options.EveryLoop turns this off.
package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/autoscalerflags"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// never is a time after every other.
const never = time.Duration(math.MaxInt64)

// MaxOverrun is how long past the last Job's ideal end a scenario without a
// duration may run while Jobs still wait.
const MaxOverrun = 7 * 24 * time.Hour

// Epoch returns virtual time zero.
func Epoch() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// Options configure one run.
type Options struct {
	// Scenario is the input, with defaults set (scenario.Parse does that).
	Scenario *scenario.Scenario
	// Label names the run in reports (for example the option set compared).
	Label string
	// Autoscaler are the decision core's options; ScanInterval the loop's period.
	Autoscaler   autoscaler.Options
	ScanInterval time.Duration
	// NewPodAutoscaler builds the HPA model of a Deployment; nil uses
	// NewHPAModel (pkg/hpa).
	NewPodAutoscaler NewPodAutoscaler
	// EveryLoop runs the autoscaler at every scan interval and every HPA at
	// every sync period even when nothing can have changed (slower; the
	// result is the same).
	EveryLoop bool
	// Progress, when set, is called now and then with the virtual time
	// reached and the end.
	Progress func(now, end time.Duration)
	// Recorder, when set, receives every loop's input and plan.
	Recorder autoscaler.Recorder
	// MaxVirtualTime, when set, refuses a run that would simulate longer
	// (see RunContext).
	MaxVirtualTime time.Duration
	// MaxMemory, when set, stops a run once the process holds more bytes
	// (see RunContext).
	MaxMemory uint64
}

// OptionsFor returns the options a scenario asks for, with its seed,
// and the settings of more applied over its own (--set, --compare).
func OptionsFor(s *scenario.Scenario, more ...[]autoscalerflags.Setting) (Options, error) {
	d, err := s.Decision(more...)
	if err != nil {
		return Options{}, err
	}
	return Options{Scenario: s, Autoscaler: d.Autoscaler, ScanInterval: d.ScanInterval}, nil
}

// Engine is one simulation; use Run.
type Engine struct {
	opts Options
	sc   *scenario.Scenario
	auto *autoscaler.Autoscaler
	snap *snapshot.Snapshot
	rng  *rand.Rand
	// irng draws interruptions; interrupting are the nodes under notice.
	irng         *rand.Rand
	interrupting map[string]bool

	now    time.Duration
	end    time.Duration
	events eventQueue
	seq    uint64

	groups    []*groupState
	groupByID map[string]*groupState
	workloads []*workloadState
	pods      map[string]*simPod
	pending   []*simPod
	podSeq    int

	sched schedulerState

	// changed counts changes the autoscaler would see.
	changed             uint64
	schedDirty          bool
	nextLoop, lastLoop  time.Duration
	nextHPA, nextSample time.Duration
	untilJobsDone       bool
	jobs                int // Job pods in the scenario

	// outcomes are what became of actions since the last loop.
	outcomes []autoscaler.Outcome
	// daemonSets are the scenario's, as the core sees them.
	daemonSets []*appsv1.DaemonSet
	// err is the first error of an action that cannot return one.
	err error

	// gangs are the jobs of several pods; requests those of them with an
	// open ProvisioningRequest, in the order they were opened.
	gangs    []*gangState
	requests []*gangState
	gangSeq  int

	rec recorder

	// done, turns, stopped and planned serve RunContext: a run stops at
	// the virtual time reached when done closes or memory runs over.
	done    <-chan struct{}
	turns   uint64
	stopped error
	planned time.Duration
}

// Run simulates opts.Scenario and returns what happened.
func Run(opts Options) (*Result, error) {
	return RunContext(context.Background(), opts)
}

func newEngine(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Scenario == nil {
		return nil, fmt.Errorf("engine: no scenario")
	}
	if opts.ScanInterval <= 0 {
		return nil, fmt.Errorf("engine: scan interval must be positive, got %s", opts.ScanInterval)
	}
	if opts.NewPodAutoscaler == nil {
		opts.NewPodAutoscaler = NewHPAModel
	}
	auto, err := autoscaler.New(opts.Autoscaler)
	if err != nil {
		return nil, fmt.Errorf("autoscaler options: %w", err)
	}
	e := &Engine{
		opts: opts, sc: opts.Scenario, auto: auto, snap: snapshot.New(),
		rng:  rand.New(rand.NewSource(opts.Scenario.Seed)),
		irng: newInterruptionSource(opts.Scenario.Seed), interrupting: map[string]bool{},
		groupByID: map[string]*groupState{}, pods: map[string]*simPod{},
		done: ctx.Done(),
	}
	e.initDaemonSets()
	if err := e.sc.AddStorage(e.snap); err != nil {
		return nil, err
	}
	if err := e.initGroups(); err != nil {
		return nil, err
	}
	e.scheduleGPUFailures()
	e.scheduleInterruptionTrace()
	if err := e.initWorkloads(); err != nil {
		return nil, err
	}
	e.end = e.sc.Duration.Duration
	if e.end == 0 {
		// Until every Job has run and the cluster has shrunk back, or a
		// week past the last ideal end when some Job never can.
		e.end, e.untilJobsDone = e.lastJobEnd()+MaxOverrun, true
	}
	e.rec.init(e)
	return e, nil
}

// run is the event loop. At one point of time: events first, then the HPA,
// then scheduling, then the autoscaler's loop (and scheduling again for pods
// it evicted), then a sample.
func (e *Engine) run() error {
	e.nextLoop, e.lastLoop = 0, -1
	e.nextHPA = 0
	if len(e.hpaWorkloads()) == 0 {
		e.nextHPA = never
	}
	e.nextSample = 0
	e.schedDirty = true
	lastProgress := time.Duration(-1)
	for {
		if e.shouldStop() {
			e.stopHere()
			break
		}
		t := min(e.nextEventAt(), e.nextLoop, e.nextHPA, e.nextSample)
		if e.untilJobsDone && e.settled(t) {
			e.end = e.now
			break
		}
		if t > e.end {
			break
		}
		e.integrate(t)
		e.now = t
		for e.nextEventAt() == t {
			if err := e.handle(e.popEvent()); err != nil {
				return err
			}
		}
		if t == e.nextHPA {
			if err := e.syncHPAs(); err != nil {
				return err
			}
			e.nextHPA = t + e.sc.HPASyncPeriod.Duration
		}
		if e.schedDirty {
			if err := e.schedulePass(); err != nil {
				return err
			}
		}
		if t == e.nextLoop {
			if err := e.loop(); err != nil {
				return err
			}
			if e.err != nil {
				return e.err
			}
			if e.schedDirty {
				if err := e.schedulePass(); err != nil {
					return err
				}
			}
		}
		if t == e.nextSample {
			e.rec.sample(e)
			e.nextSample = t + e.sc.SampleInterval.Duration
		}
		if e.opts.Progress != nil && t-lastProgress >= e.end/200 {
			e.opts.Progress(t, e.end)
			lastProgress = t
		}
	}
	e.integrate(e.end)
	e.now = e.end
	if e.opts.Progress != nil {
		e.opts.Progress(e.end, e.end)
	}
	return nil
}

// settled: every Job has run, the last ideal end has passed, and the
// cluster is back at its minimum or nothing more will happen to it.
func (e *Engine) settled(t time.Duration) bool {
	if e.rec.finished < e.jobs || t <= e.lastJobEnd() {
		return false
	}
	if e.nextEventAt() == never && e.nextLoop == never {
		return true
	}
	for _, g := range e.groups {
		if g.target > g.cfg.MinSize {
			return false
		}
	}
	return true
}

// touch records a change the autoscaler and the scheduler should look at,
// and brings the next loop forward to the first scan tick from now.
func (e *Engine) touch() {
	e.changed++
	e.schedDirty = true
	tick := e.ceilTick(e.now)
	if tick <= e.lastLoop {
		tick = e.lastLoop + e.opts.ScanInterval
	}
	if tick < e.nextLoop {
		e.nextLoop = tick
	}
}

// ceilTick is the first scan tick at or after t.
func (e *Engine) ceilTick(t time.Duration) time.Duration {
	s := e.opts.ScanInterval
	return (t + s - 1) / s * s
}

// clock turns virtual time into the wall time the core sees.
func clock(t time.Duration) time.Time { return Epoch().Add(t) }

func (e *Engine) handle(ev *event) error {
	switch ev.kind {
	case evSubmit:
		if ev.pod.gang != nil {
			e.submitGangPod(ev.pod)
			return nil
		}
		e.submit(ev.pod)
	case evFinish:
		if ev.pod.gen == ev.gen && ev.pod.node != "" {
			return e.finish(ev.pod)
		}
	case evRegister:
		return e.register(ev.creation)
	case evGPUs:
		return e.advertiseGPUs(ev.node)
	case evDeleted:
		return e.nodeDeleted(ev.node)
	case evCreationFailed:
		e.creationFailed(ev.creation)
	case evGPUFailure:
		return e.failGPUs(ev.failure)
	case evInterrupt:
		return e.interrupt(ev.node)
	case evReclaim:
		return e.reclaim(ev.node)
	case evInterruptGroup:
		return e.interruptGroup(ev.group, ev.count)
	}
	return nil
}
