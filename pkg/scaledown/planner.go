// Package scaledown decides which nodes to remove: the scale-down half of
// the pure decision core. A Planner takes a cluster snapshot, the
// PodDisruptionBudgets, the times of recent scaling events and a clock
// reading, and returns a Plan: the nodes to remove now with the pods to
// evict and where they are expected to go, the nodes that are unneeded but
// wait, and for every other node the reason it stays. It does no I/O.
//
// A loop runs in five steps:
//
//  1. eligibility: nodes being deleted, annotated scale-down-disabled,
//     outside managed groups, unready with unready removal off, or used at
//     or above the threshold are kept (utilization.go, eligibility.go);
//  2. drain rules: a candidate with a pod that cannot move is kept
//     (package drain);
//  3. removal simulation: candidates in a fixed order (empty first, then
//     those unneeded before, then by utilization and name) are taken out of
//     the snapshot one by one and their pods placed on the remaining nodes
//     with the scheduler's checks; a success is kept in the snapshot, so
//     later candidates cannot count on the removed node and do count the
//     moved pods (simulate.go);
//  4. the unneeded tracker carries, across loops, since when each node has
//     been unneeded (unneeded.go);
//  5. selection: unneeded nodes that waited long enough go now, within the
//     cooldowns and parallelism limits (choose.go), as long as their pods
//     fit elsewhere without the unneeded nodes that wait (revalidate.go).
package scaledown

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	rsim "github.com/gpuscale/gpuscale/pkg/scaledown/removal"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Planner plans scale-down loop after loop. It remembers which nodes were
// unneeded since when, and reuses its working memory between loops. It is
// not safe for concurrent use.
type Planner struct {
	opts    Options
	tracker *UnneededTracker
	judge   rsim.Judge

	// Working memory reused across loops; see session.
	nodes  []nodeState
	cands  []int32
	dests  []int32
	toMove []rsim.Item
	sim    rsim.Simulator
	names  []string
	// utilization is each node's utilization by its requests, kept while
	// the node is unchanged.
	utilization utilizationCache
}

// NewPlanner validates opts and returns a Planner with no unneeded nodes.
func NewPlanner(opts Options) (*Planner, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("scale-down planner: %w", err)
	}
	return &Planner{
		opts:    opts,
		tracker: NewUnneededTracker(),
		judge:   rsim.Judge{Rules: drain.Default(opts.DrainOptions())},
	}, nil
}

// Options returns the options the planner was built with.
func (p *Planner) Options() Options { return p.opts }

// Unneeded returns the tracker of unneeded nodes, for status reporting; the
// planner updates it on every Plan.
func (p *Planner) Unneeded() *UnneededTracker { return p.tracker }

// Plan runs one loop. The snapshot is forked on entry and reverted on exit,
// so the caller gets it back unchanged; the unneeded tracker is updated.
func (p *Planner) Plan(in Input) Plan {
	if in.Snapshot == nil {
		return Plan{Now: in.Now, MaxGracefulTermination: p.maxGrace()}
	}
	s := p.newSession(in)
	p.sim.Begin(in.Snapshot, p.opts.ExpendablePodsPriorityCutoff)
	defer func() {
		p.sim.End()
		p.release(s)
	}()
	s.classifyNodes()
	p.utilization.nodes.EndPass()
	s.rankCandidates()
	s.buildDestinations()
	in.Snapshot.Fork() // the simulation's changes, for revalidate
	s.simulateCandidates()
	p.tracker.Update(in.Now, s.unneededNames())
	s.choose()
	s.revalidate()
	s.finalDestinations()
	_ = in.Snapshot.Revert()
	s.softTaints()
	return s.finish()
}

// session is the working state of one Plan call. Its slices come from the
// Planner's working memory.
type session struct {
	p     *Planner
	in    Input
	opts  *Options
	snap  *snapshot.Snapshot
	sim   *rsim.Simulator
	judge *rsim.Judge

	nodes []nodeState // in snapshot (name) order
	cands []int32     // candidates in simulation order
	dests []int32     // where moving pods may go, most preferred first

	deleting       map[string]bool // Input.Deleting by node
	deletingGroups map[string]int  // Input.Deleting per group
	deletingDrains int
	room           room

	nonEmptyFound int
	removals      []removal
	moves         []disruption.Move // Removal.Evict of every removal, back to back
	daemonSetPods []*v1.Pod         // Removal.DaemonSetPods, back to back

	// rehops are the later moves of pods that an earlier removal moved
	// (see record); refused are due removals refused a place (see grant);
	// policies are the disruption limits by group (see policy).
	rehops   []rehop
	refused  []refused
	policies map[string]disruption.Group

	kept     []Kept
	unneeded []Unneeded
	deletes  []int32 // indices into removals, in deletion order
	plan     Plan
}

// nodeState is what a loop knows about one node.
type nodeState struct {
	ni    *snapshot.NodeInfo
	group *snapshot.NodeGroup
	// ready is the node's Ready condition; awaitingGPU marks a GPU node
	// whose GPUs are not advertised. Either makes the node count as unready.
	ready, awaitingGPU bool
	util               disruption.Utilization
	// candidate: passed eligibility and the drain rules, to be simulated.
	candidate bool
	// dest: moving pods may be placed here.
	dest bool
	// empty: no pod must move (found by the drain rules before simulation).
	empty bool
	// wasUnneeded: unneeded in the previous loop.
	wasUnneeded bool
	// rank orders the candidates (rankCandidates).
	rank rsim.Rank
	// judged is what the drain rules found on the node's pods when the
	// loop started; judged.Waits is a pod annotated safe-to-evict
	// "on-completion" still running here: the node may be unneeded but
	// waits for it. The simulation marks removed nodes gone in session.sim.
	judged rsim.Judged
	// removal indexes session.removals, or -1.
	removal int32
	// waiting: unneeded but not removed now; deleted: removed now.
	waiting, deleted bool
}

func (st *nodeState) unready() bool { return !st.ready || st.awaitingGPU }

func (st *nodeState) name() string { return st.ni.Name() }

func (st *nodeState) groupID() string { return st.ni.Group }

func (p *Planner) newSession(in Input) *session {
	s := &session{
		p:     p,
		in:    in,
		opts:  &p.opts,
		snap:  in.Snapshot,
		sim:   &p.sim,
		judge: &p.judge,
		nodes: p.nodes[:0],
		cands: p.cands[:0],
		dests: p.dests[:0],
		plan:  Plan{Now: in.Now, MaxGracefulTermination: p.maxGrace()},
	}
	s.judge.Reset(drain.Context{Now: in.Now, Budgets: drain.NewBudgets(in.PDBs), Replicas: in.Replicas})
	if len(in.Deleting) > 0 {
		s.deleting = make(map[string]bool, len(in.Deleting))
		s.deletingGroups = map[string]int{}
		for _, d := range in.Deleting {
			s.deleting[d.Node] = true
			s.deletingGroups[d.Group]++
			if d.Drain {
				s.deletingDrains++
			}
		}
	}
	return s
}

// release keeps the session's slices for the next loop and drops every
// reference into this loop's snapshot, so that it can be collected.
func (p *Planner) release(s *session) {
	p.nodes, p.cands, p.dests = s.nodes, s.cands, s.dests
	clear(p.nodes[:cap(p.nodes)])
	clear(p.toMove[:cap(p.toMove)])
	clear(p.names[:cap(p.names)])
}

func (p *Planner) maxGrace() time.Duration {
	return time.Duration(p.opts.MaxGracefulTerminationSec) * time.Second
}

// unneededNames lists the nodes the simulation removed.
func (s *session) unneededNames() []string {
	names := s.p.names[:0]
	for i := range s.removals {
		names = append(names, s.nodes[s.removals[i].node].name())
	}
	s.p.names = names
	return names
}
