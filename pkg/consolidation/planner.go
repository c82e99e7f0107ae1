package consolidation

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuscale/gpuscale/pkg/estimator"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/scaledown/removal"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Planner plans consolidation pass after pass. It keeps only working
// memory between passes (what a pass remembers travels in Input.State and
// Plan.State). It is not safe for concurrent use.
type Planner struct {
	opts  Options
	judge removal.Judge

	// Working memory reused across passes.
	sim   removal.Simulator
	nodes []nodeState
	cands []int32
	items []removal.Item
	tally limits.Tally
}

// NewPlanner validates opts and returns a Planner.
func NewPlanner(opts Options) (*Planner, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("consolidation planner: %w", err)
	}
	p := &Planner{opts: opts, judge: removal.Judge{Rules: drain.Default(opts.Drain), WaitKeeps: true}}
	p.sim.Revisit = true
	return p, nil
}

// Options returns the options the planner was built with.
func (p *Planner) Options() Options { return p.opts }

// Plan runs one pass. With consolidation disabled it returns an empty plan
// (and the loop need not call it). The pass drops expendable pods and
// simulates on a fork of the snapshot (removal.Simulator.Begin), reverted on
// exit, so the caller gets it back unchanged.
func (p *Planner) Plan(in Input) Plan {
	if !p.opts.Enabled || in.Snapshot == nil {
		return Plan{Now: in.Now}
	}
	s := p.newSession(in)
	p.sim.Begin(in.Snapshot, p.opts.Drain.ExpendablePodsPriorityCutoff)
	defer func() {
		p.sim.End()
		p.release(s)
	}()
	s.classifyNodes()
	s.rankCandidates()
	s.buildOrders()
	s.deletePass()
	s.replacePass()
	return s.finish()
}

// session is the working state of one pass.
type session struct {
	p     *Planner
	in    Input
	opts  *Options
	snap  *snapshot.Snapshot
	sim   *removal.Simulator
	judge *removal.Judge

	nodes []nodeState // in snapshot (name) order, numbered as in sim
	cands []int32     // candidates in the order they are weighed
	room  room

	// gpuOrder and cpuOrder index sim's destination orders for pods that
	// ask for GPUs and pods that do not.
	gpuOrder, cpuOrder int

	deleting  map[string]bool
	replacing map[string]bool // old nodes of replacements in flight
	launched  map[string]bool // new nodes of replacements in flight

	evictions []Eviction // of every move, back to back
	moves     []plannedMove
	waiting   []Waiting
	kept      []Kept
	templates map[string]*estimator.Template
	// empties are empty template nodes, one a group, made once a pass.
	empties map[string]*snapshot.NodeInfo
}

// plannedMove is a Move with its evictions as a range of session.evictions.
type plannedMove struct {
	Move
	lo, hi int
}

// Fates of a node in a pass.
const (
	undecided uint8 = iota
	kept
	moved
	waiting
)

// nodeState is what a pass knows about one node.
type nodeState struct {
	ni    *snapshot.NodeInfo
	group *snapshot.NodeGroup
	price float64
	// gpus is the node's allocatable GPUs, freeGPUs those no pod requests.
	gpus, freeGPUs int64
	// util is what the node is ranked by: requested over allocatable GPUs
	// on a GPU node, the larger of cpu and memory otherwise.
	util float64
	// kind groups nodes a multi-node replacement weighs together: the GPU
	// type of a GPU node, "" for the others.
	kind string
	// dest: pods may be placed here; candidate: it may be moved.
	dest, candidate bool
	// empty: no pod must move.
	empty bool
	// received: a move of this pass placed pods here, so no replacement of
	// this pass takes it (its pods would move twice).
	received bool
	// judged is what the drain rules found on its pods at the start.
	judged removal.Judged
	// rank orders the candidates (rankCandidates).
	rank removal.Rank
	// since is when the node was first found consolidatable in an unbroken
	// run of passes (zero when it was not in the last one).
	since time.Time
	fate  uint8
	// miss says why the node's pods fit on no other node, once tried.
	miss string
}

func (st *nodeState) name() string { return st.ni.Name() }

func (st *nodeState) groupID() string { return st.ni.Group }

func (p *Planner) newSession(in Input) *session {
	s := &session{
		p: p, in: in, opts: &p.opts, snap: in.Snapshot, sim: &p.sim,
		judge:    &p.judge,
		nodes:    p.nodes[:0],
		cands:    p.cands[:0],
		deleting: map[string]bool{}, replacing: map[string]bool{}, launched: map[string]bool{},
		templates: map[string]*estimator.Template{},
		empties:   map[string]*snapshot.NodeInfo{},
	}
	s.judge.Reset(drain.Context{Now: in.Now, Budgets: drain.NewBudgets(in.PDBs), Replicas: in.Replicas})
	for _, d := range in.Deleting {
		s.deleting[d.Node] = true
	}
	for _, r := range in.Replacing {
		for _, n := range r.Nodes {
			s.replacing[n] = true
		}
		for _, n := range r.New {
			s.launched[n] = true
		}
	}
	return s
}

// release keeps the session's slices for the next pass and drops every
// reference into this pass's snapshot.
func (p *Planner) release(s *session) {
	p.nodes, p.cands = s.nodes, s.cands
	clear(p.nodes[:cap(p.nodes)])
	clear(p.items[:cap(p.items)])
}

// keep records why node i stays.
func (s *session) keep(i int32, reason Reason, msg string) *Kept {
	st := &s.nodes[i]
	st.fate = kept
	s.kept = append(s.kept, Kept{Node: st.name(), Group: st.groupID(), Reason: reason, Message: msg})
	return &s.kept[len(s.kept)-1]
}

// finish assembles the plan, copying out of the working memory, and the
// state for the next pass.
func (s *session) finish() Plan {
	plan := Plan{Now: s.in.Now, Waiting: s.waiting, State: State{Since: map[string]time.Time{}}}
	for _, m := range s.moves {
		mv := m.Move
		mv.Evict = slices.Clone(s.evictions[m.lo:m.hi])
		plan.Moves = append(plan.Moves, mv)
	}
	for i := range s.nodes {
		st := &s.nodes[i]
		if st.fate == waiting {
			plan.State.Since[st.name()] = st.since
		}
	}
	slices.SortFunc(s.kept, func(a, b Kept) int { return strings.Compare(a.Node, b.Node) })
	plan.Kept = s.kept
	return plan
}

// stable tells whether every node of a move has been consolidatable for
// StableTime; if not, it returns when the last of them became so.
func (s *session) stable(nodes []int32) (bool, time.Time) {
	var latest time.Time
	for _, i := range nodes {
		st := &s.nodes[i]
		if st.since.IsZero() {
			st.since = s.in.Now
		}
		if st.since.After(latest) {
			latest = st.since
		}
	}
	return !latest.Add(s.opts.StableTime).After(s.in.Now), latest
}

// wait records a move found that waits for StableTime.
func (s *session) wait(kind MoveKind, nodes []int32, since time.Time) {
	w := Waiting{Kind: kind, Since: since, Wait: since.Add(s.opts.StableTime).Sub(s.in.Now)}
	for _, i := range nodes {
		st := &s.nodes[i]
		w.Nodes = append(w.Nodes, st.name())
		s.keep(i, ReasonNotStableLongEnough, fmt.Sprintf(
			"a %s move takes the node; consolidatable since %s, %s of %s (--consolidation-stable-time)",
			strings.ToLower(string(kind)), st.since.UTC().Format(time.RFC3339),
			s.in.Now.Sub(st.since).Round(time.Second), s.opts.StableTime))
		st.fate = waiting
	}
	s.waiting = append(s.waiting, w)
}
