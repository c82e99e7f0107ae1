package engine

import (
	"cmp"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The modelled cloud interrupts spot nodes: each node of a group with
// interruptionsPerHour lives an exponentially distributed time (drawn from
// its own random source, seeded from the scenario's, so the scheduler's
// tie-breaks stay as they are), then carries the interruption taint for
// the notice, and is then reclaimed: whatever still runs on it is killed,
// and the node goes. A reclaimed node's group keeps its target (an Auto
// Scaling group or managed instance group launches a replacement), unless
// the autoscaler removed the node first (its removal lowers the target).
//
// Work lost: a Job pod displaced by an interruption, drained within the
// notice or killed at its end, restarts from scratch (no checkpoint is
// assumed), so its run on the node is lost; Result counts those runs.

// InterruptionResult is what interruptions did to a run.
type InterruptionResult struct {
	// Nodes were interrupted; Reclaimed of them were still there at the
	// end of their notice (not drained and removed in time).
	Nodes, Reclaimed int
	// LostPodHours and LostGPUHours are the runs of Job pods displaced by
	// interruptions, done again from scratch.
	LostPodHours, LostGPUHours float64
}

// interruptionSeed keeps the interruption draws apart from the
// scheduler's random source.
const interruptionSeed = 0x5107

func newInterruptionSource(seed int64) *rand.Rand {
	return rand.New(rand.NewSource(seed ^ interruptionSeed))
}

// scheduleInterruption draws when a node just added to g is interrupted.
func (e *Engine) scheduleInterruption(g *groupState, node string) {
	r := g.cfg.InterruptionsPerHour
	if r <= 0 {
		return
	}
	life := time.Duration(e.cloud.irng.ExpFloat64() / r * float64(time.Hour))
	if life > math.MaxInt64/4 {
		return
	}
	e.events.push(&event{at: e.now + life, kind: evInterrupt, node: node})
}

// scheduleInterruptionTrace queues each group's interruption trace.
func (e *Engine) scheduleInterruptionTrace() {
	for _, g := range e.cloud.groups {
		for _, in := range g.cfg.Interruptions {
			e.events.push(&event{at: in.At.Duration, kind: evInterruptGroup, group: g, count: in.Count})
		}
	}
}

// interruptGroup interrupts count of a group's nodes not yet interrupted,
// the oldest first (by name: nodes are numbered as they are made).
func (e *Engine) interruptGroup(g *groupState, count int) error {
	var names []string
	for _, ni := range e.snap.NodesInGroup(g.cfg.Name) {
		if !e.cloud.interrupting[ni.Name()] {
			names = append(names, ni.Name())
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(nodeNumber(a), nodeNumber(b)) })
	for _, n := range names[:min(count, len(names))] {
		if err := e.interrupt(n); err != nil {
			return err
		}
	}
	return nil
}

// nodeNumber is the n of a simulated node named <group>-<n>.
func nodeNumber(name string) int {
	n, _ := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
	return n
}

// interrupt taints a node with the interruption signal; the cloud reclaims
// it at the end of the notice.
func (e *Engine) interrupt(name string) error {
	if e.snap.Node(name) == nil || e.cloud.interrupting[name] {
		return nil // removed before its interruption came, or interrupted already
	}
	e.rec.interruptions++
	e.cloud.interrupting[name] = true
	if err := e.replaceNode(name, func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: e.sc.InterruptionTaint, Value: "sim", Effect: v1.TaintEffectNoSchedule})
	}); err != nil {
		return err
	}
	e.events.push(&event{at: e.now + e.sc.InterruptionNotice.Duration, kind: evReclaim, node: name})
	return nil
}

// reclaim is the end of a node's notice: its pods are killed, the node
// goes, and its group launches a replacement for it.
func (e *Engine) reclaim(name string) error {
	ni := e.snap.Node(name)
	if ni == nil {
		return nil // drained and removed within the notice
	}
	g := e.cloud.byID[ni.Group]
	e.rec.reclaimedNodes++
	if err := e.evictAll(name); err != nil {
		return err
	}
	if err := e.removeNode(name); err != nil {
		return err
	}
	delete(e.cloud.interrupting, name)
	return e.requestNodes(g, 1)
}
