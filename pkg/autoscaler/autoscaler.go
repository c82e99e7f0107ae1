// Package autoscaler is the node autoscaler's loop as a pure step, in the
// manner of etcd's raft Ready/Advance: Step takes the cluster snapshot, the
// pending pods, the time and the outcomes of earlier actions, and returns
// the actions to carry out, when the next decision can differ, and a
// structured status. It does no I/O and keeps its state to itself; the
// live, kwok and simulator shells gather the inputs, carry the actions out
// through one actuator interface (package actuation) and hand back what
// became of them.
package autoscaler

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/capacitybuffer"
	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/consolidation"
	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/forecast"
	"github.com/gpuscale/gpuscale/pkg/pending"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/provisioningrequest"
	"github.com/gpuscale/gpuscale/pkg/repair"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Autoscaler holds what lives from one loop to the next: the node-group
// state, the unneeded-node clocks and the expanders' random source. Only
// Step changes it.
type Autoscaler struct {
	opts  Options
	state *clusterstate.State
	up    *scaleup.Planner
	down  *scaledown.Planner
	cons  *consolidation.Planner
	rep   *repair.Planner
	// consState and replacing are consolidation's memory: since when
	// nodes are consolidatable, and replacements in flight.
	consState consolidation.State
	replacing []replacement
	// requests remembers, per ProvisioningRequest, the conditions written
	// and the retry backoff.
	requests map[types.UID]*requestMemory
	// repairMem is node repair's memory.
	repairMem repairMemory
	// demand is the history of the inference workloads' demand.
	demand forecast.History
}

// New validates opts and builds both planners.
func New(opts Options) (*Autoscaler, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.ScaleUp.Limits, opts.ScaleDown.Limits = opts.Limits, opts.Limits
	opts.ScaleUp.ExpendablePodsPriorityCutoff = opts.ExpendablePodsPriorityCutoff
	opts.ScaleDown.ExpendablePodsPriorityCutoff = opts.ExpendablePodsPriorityCutoff
	opts.Consolidation.Limits = opts.Limits
	opts.Consolidation.Drain = opts.DrainOptions()
	opts.Consolidation.MaxCloudProviderNodeDeletionTime = opts.ScaleDown.MaxCloudProviderNodeDeletionTime
	opts.ScaleDown.Disruption, opts.Consolidation.Disruption = opts.Disruption, opts.Disruption
	opts.Repair.Disruption, opts.Repair.Drain = opts.Disruption, opts.DrainOptions()
	opts.Repair.MaxCloudProviderNodeDeletionTime = opts.ScaleDown.MaxCloudProviderNodeDeletionTime
	up, err := scaleup.NewPlanner(opts.ScaleUp)
	if err != nil {
		return nil, err
	}
	down, err := scaledown.NewPlanner(opts.ScaleDown)
	if err != nil {
		return nil, err
	}
	cons, err := consolidation.NewPlanner(opts.Consolidation)
	if err != nil {
		return nil, err
	}
	rep, err := repair.NewPlanner(opts.Repair)
	if err != nil {
		return nil, err
	}
	return &Autoscaler{opts: opts, state: clusterstate.New(opts.ClusterState), up: up, down: down, cons: cons, rep: rep,
		repairMem: repairMemory{repairing: map[string]bool{}}}, nil
}

// Options returns the options the autoscaler runs with.
func (a *Autoscaler) Options() Options { return a.opts }

// Input is one loop's view of the cluster and what happened since the
// last one.
type Input struct {
	Now      time.Time
	Snapshot *snapshot.Snapshot
	// Pending are the pods the scheduler marked unschedulable, and those of
	// bypassed schedulers waiting for a node (pending.Select).
	Pending []*v1.Pod
	// OtherSchedulers count the pods waiting for a node that the shell
	// left alone because a scheduler neither default nor bypassed places
	// them (pending.Selection); they are reported in the status.
	OtherSchedulers []pending.SchedulerPods
	DaemonSets      []*appsv1.DaemonSet
	PDBs            []*policyv1.PodDisruptionBudget
	// Outcomes are what became of earlier actions, in the order they
	// happened.
	Outcomes []Outcome
	// ProvisioningRequests are the cluster's requests with the PodTemplates
	// they name; read only when Options.ProvisioningRequests.Enabled.
	ProvisioningRequests []provisioningrequest.Request
	// Replicas are the replica counts of the ReplicaSets and
	// ReplicationControllers (--min-replica-count); nil when unknown.
	Replicas drain.Replicas
	// CapacityBuffers are the buffers ready for provisioning, resolved
	// (their chunk shape and count); read only when
	// Options.CapacityBuffers.PodInjectionEnabled.
	CapacityBuffers []capacitybuffer.Buffer
	// Demand is each inference workload's demand as its HPA reads it this
	// loop; read only when Options.Forecast.Enabled.
	Demand []forecast.Demand
	// Priorities is the priority expander's configuration as the shell
	// read it for this loop (the live shell: its ConfigMap); nil keeps the
	// one in force (Options.ScaleUp.Priorities at first). A configuration
	// equal to the one in force changes nothing.
	Priorities *expander.Priorities
}

// Plan is one loop's decisions.
type Plan struct {
	// Actions to carry out, in order: target decreases and deletions of
	// instances that never joined, scale-ups, soft taints, removals.
	Actions []Action
	// NextDecisionAt is the earliest time at which a loop on the same
	// inputs could decide differently (an unneeded node's wait, a
	// cooldown, a backoff or a provisioning timeout ending); zero when no
	// timer is pending. Any change of input may bring it forward.
	NextDecisionAt time.Time
	// Status is the loop's account, for the status ConfigMap, events,
	// metrics and explain.
	Status status.Status
}

// Step decides one loop. Outcomes are applied first; then the scale-ups
// in flight are reconciled with what registered (timeouts back groups off
// and give back targets, instances that never joined are deleted); then,
// unless the cluster is too unhealthy, scale-up plans, and scale-down runs
// when this loop grows nothing, on a view where the pending pods that fit
// existing nodes already take their room; then consolidation and node
// repair, each counting the removals planned before it against the same
// disruption budgets. The snapshot is unchanged afterwards.
func (a *Autoscaler) Step(in Input) (Plan, error) {
	// Decisions use wall-clock readings only: a monotonic reading cannot be
	// recorded, and a replay must decide the same.
	in.Now = in.Now.Round(0)
	if err := a.takePriorities(in.Priorities); err != nil {
		return Plan{}, err
	}
	s := in.Snapshot
	s.Fork()
	defer func() { _ = s.Revert() }()
	var acts []Action
	for _, d := range a.applyOutcomes(s, in.Outcomes) {
		if err := lowerTarget(s, d.Group, d.Delta); err != nil {
			return Plan{}, err
		}
		acts = append(acts, d)
	}
	rec := a.state.Update(s, in.Now)
	l := loop{Autoscaler: a, in: in}
	if err := l.planBuffers(); err != nil {
		return Plan{}, fmt.Errorf("forecast buffers: %w", err)
	}
	gone, err := l.interrupted(s)
	if err != nil {
		return Plan{}, fmt.Errorf("interruptions: %w", err)
	}
	acts = append(acts, gone...)
	ending, err := l.blocksEnding(s)
	if err != nil {
		return Plan{}, fmt.Errorf("capacity blocks: %w", err)
	}
	acts = append(acts, ending...)
	l.classifyNodes(s)
	l.health = l.healthOf()
	if l.health.Safe {
		fixes, err := reconcileActions(s, rec)
		if err != nil {
			return Plan{}, err
		}
		acts = append(acts, fixes...)
		l.prepareRequests()
		if err := l.plan(); err != nil {
			return Plan{}, err
		}
		l.requestResults()
		acts = append(acts, l.actions()...)
		more, err := l.consolidate()
		if err != nil {
			return Plan{}, fmt.Errorf("consolidation: %w", err)
		}
		acts = append(acts, more...)
		acts = append(acts, l.repair()...)
	} else {
		l.downSkipped, l.downSkippedMessage = skipUnhealthy, l.health.Message
		l.pendingUnsafe()
	}
	return Plan{Actions: acts, NextDecisionAt: l.nextDecision(), Status: l.status()}, nil
}

// takePriorities puts a new priority expander configuration in force.
func (a *Autoscaler) takePriorities(p *expander.Priorities) error {
	if p == nil || p.Equal(a.opts.ScaleUp.Priorities) {
		return nil
	}
	if err := a.up.SetPriorities(p); err != nil {
		return fmt.Errorf("priority expander configuration: %w", err)
	}
	a.opts.ScaleUp.Priorities = p
	return nil
}

// loop is the working state of one Step.
type loop struct {
	*Autoscaler
	in Input
	// nodes are the snapshot's nodes and readiness their states, as the
	// loop began.
	nodes     []*snapshot.NodeInfo
	readiness []clusterstate.NodeState
	// classify is the loop's Classifier: nodes classified as the loop
	// began are not classified again.
	classify clusterstate.Classifier
	health   status.Health
	upPlan   scaleup.Plan
	downPlan scaledown.Plan
	consPlan consolidation.Plan
	// repairPlan is node repair's plan of this loop.
	repairPlan repair.Plan
	// consolidated counts the consolidation moves started this loop;
	// consHeld is why consolidation did not plan, if it did not.
	consolidated              int
	consHeld, consHeldMessage string
	// downSkipped is a stable code when scale-down did not run.
	downSkipped, downSkippedMessage string
	// req is the loop's work on ProvisioningRequests.
	req requestLoop
	// takenAway are the nodes being taken away, planned as gone.
	takenAway []status.Node
	// buffers are the CapacityBuffers the loop plans with, the forecast's
	// included; forecasts say how the forecast sized its own.
	buffers   []capacitybuffer.Buffer
	forecasts []status.Forecast
}

// Codes of Status.Cluster.ScaleDown.Skipped.
const (
	skipDisabled  = "ScaleDownDisabled"
	skipScaleUp   = "ScaleUpInThisLoop"
	skipUnhealthy = "ClusterUnhealthy"
)

// plan runs both halves on the (forked) snapshot.
func (l *loop) plan() error {
	up, err := l.up.Plan(scaleup.Input{Now: l.in.Now, Snapshot: l.in.Snapshot, Pending: l.withBuffers(),
		DaemonSets: l.in.DaemonSets, State: l.state, Readiness: l.classify, Gangs: l.req.gangs, Booked: l.req.booked})
	if err != nil {
		return fmt.Errorf("scale-up: %w", err)
	}
	l.upPlan = up
	switch {
	case !l.opts.ScaleDownEnabled:
		l.downSkipped, l.downSkippedMessage = skipDisabled, "scale-down is disabled (--scale-down-enabled=false)"
	case len(up.ScaleUps) > 0:
		l.downSkipped, l.downSkippedMessage = skipScaleUp, "this loop scales up"
	default:
		if l.downPlan, err = l.scaleDown(); err != nil {
			return fmt.Errorf("scale-down: %w", err)
		}
	}
	return nil
}

// scaleDown plans removals with the pending pods that will schedule on
// registered nodes placed there, so their room is not given away: their
// claims' devices too, allocated as the scheduler will allocate them.
func (l *loop) scaleDown() (scaledown.Plan, error) {
	s := l.in.Snapshot
	s.Fork()
	defer func() { _ = s.Revert() }()
	if err := l.placeExpected(s); err != nil {
		return scaledown.Plan{}, err
	}
	return l.down.Plan(scaledown.Input{
		Now: l.in.Now, Snapshot: s, PDBs: l.in.PDBs, Replicas: l.in.Replicas, Deleting: l.deletingForScaleDown(),
		Reserved: l.reservedNew(), Readiness: l.classify,
		LastScaleUp: l.state.LastScaleUp(), LastScaleDelete: l.state.LastScaleDownDelete(),
		LastScaleDownFailure: l.state.LastScaleDownFailure(),
	}), nil
}

// placeExpected places, in a forked snapshot, the pending pods that will
// schedule on registered nodes and the pods of gangs and bookings held
// there, so that neither scale-down nor consolidation gives their room
// away.
func (l *loop) placeExpected(s *snapshot.Snapshot) error {
	var checker *predicates.Checker
	place := func(pod *v1.Pod, node string) error {
		ni := s.Node(node)
		if ni == nil {
			return nil // an upcoming node: not in the real cluster
		}
		pi, err := snapshot.NewPodInfo(pod)
		if err != nil {
			return err
		}
		if checker == nil && len(pod.Spec.ResourceClaims) > 0 {
			checker = predicates.New(s)
		}
		return bindWithClaims(s, checker, pi, ni)
	}
	for i, pod := range l.upPlan.WillSchedule {
		if err := place(pod, l.upPlan.Placements[i]); err != nil {
			return err
		}
	}
	// The room of booked ProvisioningRequests and of gangs placed this
	// loop is held too.
	for _, h := range l.upPlan.Held {
		if err := place(h.Pod, h.Node); err != nil {
			return err
		}
	}
	return nil
}

// bindWithClaims binds a pod the scheduler is expected to put on ni: a pod
// with resource claims through checker, so that its claims are allocated
// devices of ni and no other pod is given them; a pod that finds no devices
// there any more (an earlier pod took them) is bound without them, holding
// its cpu and memory. checker may be nil for a pod without claims.
func bindWithClaims(s *snapshot.Snapshot, checker *predicates.Checker, pi *snapshot.PodInfo, ni *snapshot.NodeInfo) error {
	if len(pi.Pod.Spec.ResourceClaims) == 0 {
		return s.AddPodInfo(pi, ni.Name())
	}
	r, err := checker.Place(pi, ni)
	if err != nil || r.Fits() {
		return err
	}
	return s.AddPodInfo(pi, ni.Name())
}

// actions turns the halves' plans into actions and notes the removals
// started.
func (l *loop) actions() []Action {
	var out []Action
	for _, su := range l.upPlan.ScaleUps {
		out = append(out, ScaleUp{Group: su.Group, Delta: su.Delta, NewTarget: su.NewTarget, Why: su.Why, Requests: su.Gangs,
			Queued: su.Queued})
	}
	out = append(out, l.requestActions()...)
	if len(l.downPlan.SoftTaint) > 0 {
		out = append(out, SoftTaint{Nodes: l.downPlan.SoftTaint})
	}
	if len(l.downPlan.SoftUntaint) > 0 {
		out = append(out, SoftUntaint{Nodes: l.downPlan.SoftUntaint})
	}
	if len(l.downPlan.Delete) > 0 {
		for _, r := range l.downPlan.Delete {
			l.state.RecordDeletionStarted(clusterstate.Deletion{Node: r.Node, Group: r.Group, Drain: !r.Empty, Since: l.in.Now})
		}
		out = append(out, RemoveNodes{Removals: l.downPlan.Delete, MaxGracefulTermination: l.downPlan.MaxGracefulTermination})
	}
	return out
}

// reconcileActions turns what clusterstate found into actions, applying
// them to the (forked) snapshot so this loop plans on the targets they
// leave.
func reconcileActions(s *snapshot.Snapshot, rec clusterstate.Reconciliation) ([]Action, error) {
	var out []Action
	for _, sh := range rec.Shrinks {
		if err := lowerTarget(s, sh.Group, sh.Delta); err != nil {
			return nil, err
		}
		out = append(out, DecreaseTarget{Group: sh.Group, Delta: sh.Delta, Reason: sh.Reason, Message: sh.Message})
	}
	for _, u := range rec.Unregistered {
		if err := lowerTarget(s, u.Group, len(u.ProviderIDs)); err != nil {
			return nil, err
		}
		out = append(out, DeleteInstances{Group: u.Group, ProviderIDs: u.ProviderIDs, Since: u.Since})
	}
	return out, nil
}

// lowerTarget lowers a group's target in the snapshot, not below zero.
func lowerTarget(s *snapshot.Snapshot, group string, delta int) error {
	g := s.NodeGroup(group)
	if g == nil {
		return nil
	}
	ng := *g
	ng.TargetSize = max(ng.TargetSize-delta, 0)
	return s.SetNodeGroup(ng)
}
