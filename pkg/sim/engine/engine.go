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

// Engine is one simulation; use Run. It holds a few collaborators, each
// with one idea, and the event loop that ties them to the decision core:
//
//   - events: the queue of what happens at a point of virtual time (events.go);
//   - cloud: the node groups, their creations, deletions, stockouts,
//     interruptions and GPU failures (cluster.go, interruptions.go,
//     gpufailure.go);
//   - work: the Deployments, Jobs, gangs and their pods (workload.go,
//     gang.go, hpa.go);
//   - sched: the placement model that binds pending pods (scheduler.go);
//   - rec: the accounting of costs, waits, unserved demand and samples
//     (record.go, unserved.go, limitwatch.go);
//   - pace: when the next loop, HPA sync and sample are due, and whether
//     anything changed since the last loop (engine.go);
//   - stop: what ends a run early (limits.go).
//
// The loop hands the snapshot to autoscaler.Step and carries the plan out
// through simActuator (autoscale.go, actuator.go).
type Engine struct {
	opts Options
	sc   *scenario.Scenario
	auto *autoscaler.Autoscaler
	snap *snapshot.Snapshot

	now    time.Duration
	end    time.Duration
	events eventQueue

	cloud cloud
	work  workloads
	sched schedulerState
	rec   recorder
	pace  pacing
	stop  runStop

	// outcomes are what became of actions since the last loop.
	outcomes []autoscaler.Outcome
	// err is the first error of an action that cannot return one.
	err error
}

// pacing says when the event loop next runs each of its periodic steps, and
// counts the changes the autoscaler would see.
type pacing struct {
	// scan is the autoscaler loop's period.
	scan time.Duration
	// changed counts changes the autoscaler would see; schedDirty is set
	// when the scheduler should look at the pending pods again.
	changed             uint64
	schedDirty          bool
	nextLoop, lastLoop  time.Duration
	nextHPA, nextSample time.Duration
	// untilJobsDone: the scenario has no duration, so the run ends once
	// every Job has run and the cluster settled (settled).
	untilJobsDone bool
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
		sched: schedulerState{cfg: opts.Scenario.Scheduler, rng: rand.New(rand.NewSource(opts.Scenario.Seed))},
		cloud: newCloud(opts.Scenario.Seed),
		work:  workloads{pods: map[string]*simPod{}},
		pace:  pacing{scan: opts.ScanInterval},
		stop:  runStop{done: ctx.Done(), maxMemory: opts.MaxMemory},
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
	e.scheduleBlockEnds()
	if err := e.initWorkloads(); err != nil {
		return nil, err
	}
	e.end = e.sc.Duration.Duration
	if e.end == 0 {
		// Until every Job has run and the cluster has shrunk back, or a
		// week past the last ideal end when some Job never can.
		e.end, e.pace.untilJobsDone = e.work.lastJobEnd()+MaxOverrun, true
	}
	e.rec.init(&e.cloud, &e.work)
	return e, nil
}

// run is the event loop. At one point of time: events first, then the HPA,
// then scheduling, then the autoscaler's loop (and scheduling again for pods
// it evicted), then a sample.
func (e *Engine) run() error {
	e.pace.nextLoop, e.pace.lastLoop = 0, -1
	e.pace.nextHPA = 0
	if len(e.work.withHPA()) == 0 {
		e.pace.nextHPA = never
	}
	e.pace.nextSample = 0
	e.pace.schedDirty = true
	lastProgress := time.Duration(-1)
	for {
		if e.stop.shouldStop(e.now) {
			e.stopHere()
			break
		}
		t := min(e.events.nextAt(), e.pace.nextLoop, e.pace.nextHPA, e.pace.nextSample)
		if e.pace.untilJobsDone && e.settled(t) {
			e.end = e.now
			break
		}
		if t > e.end {
			break
		}
		e.integrate(t)
		e.now = t
		for e.events.nextAt() == t {
			if err := e.handle(e.events.pop()); err != nil {
				return err
			}
		}
		if t == e.pace.nextHPA {
			if err := e.syncHPAs(); err != nil {
				return err
			}
			e.pace.nextHPA = t + e.sc.HPASyncPeriod.Duration
		}
		if e.pace.schedDirty {
			if err := e.schedulePass(); err != nil {
				return err
			}
		}
		if t == e.pace.nextLoop {
			if err := e.loop(); err != nil {
				return err
			}
			if e.err != nil {
				return e.err
			}
			if e.pace.schedDirty {
				if err := e.schedulePass(); err != nil {
					return err
				}
			}
		}
		if t == e.pace.nextSample {
			e.rec.sample(e.now, &e.cloud, &e.work)
			e.pace.nextSample = t + e.sc.SampleInterval.Duration
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
	if e.rec.finished < e.work.jobs || t <= e.work.lastJobEnd() {
		return false
	}
	if e.events.nextAt() == never && e.pace.nextLoop == never {
		return true
	}
	for _, g := range e.cloud.groups {
		if g.target > g.cfg.MinSize {
			return false
		}
	}
	return true
}

// touch records a change the autoscaler and the scheduler should look at,
// and brings the next loop forward to the first scan tick from now.
func (e *Engine) touch() { e.pace.touch(e.now) }

// touch counts a change seen at now and brings the next loop forward to
// the first scan tick from now.
func (p *pacing) touch(now time.Duration) {
	p.changed++
	p.schedDirty = true
	tick := p.ceilTick(now)
	if tick <= p.lastLoop {
		tick = p.lastLoop + p.scan
	}
	if tick < p.nextLoop {
		p.nextLoop = tick
	}
}

// ceilTick is the first scan tick at or after t.
func (p *pacing) ceilTick(t time.Duration) time.Duration {
	return (t + p.scan - 1) / p.scan * p.scan
}

// wake is the first scan tick after now at or after the core's next
// decision time: until then a loop on unchanged inputs would decide the
// same. Any change before then brings the loop forward (touch).
func (p *pacing) wake(now time.Duration, at time.Time) time.Duration {
	if at.IsZero() {
		return never
	}
	tick := p.ceilTick(at.Sub(Epoch()))
	if tick <= now {
		tick = now + p.scan
	}
	return tick
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
	case evBlockTerminating:
		return e.blockTerminating(ev.group)
	case evBlockEnd:
		return e.blockEnd(ev.group)
	case evQueuedGrant:
		return e.grantQueued(ev.queued)
	case evRunEnd:
		return e.endRun(ev.queued)
	}
	return nil
}
