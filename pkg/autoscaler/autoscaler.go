// Package autoscaler is the node autoscaler's single loop: one call takes the
// cluster snapshot, the pending pods and the time, and returns the scale-up
// and scale-down actions together. It does no I/O; the live, kwok and
// simulator shells gather the inputs and carry out the plan.
package autoscaler

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/scaleup"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Options carry every decision option with the upstream defaults
// (DefaultOptions). Limits and ExpendablePodsPriorityCutoff are set here once
// and passed to both halves.
type Options struct {
	ScaleUp      scaleup.Options
	ScaleDown    scaledown.Options
	ClusterState clusterstate.Options
	// ScaleDownEnabled (--scale-down-enabled, true).
	ScaleDownEnabled bool
	// Limits are --max-nodes-total, --cores-total, --memory-total, --gpu-total.
	Limits limits.Limits
	// ExpendablePodsPriorityCutoff (--expendable-pods-priority-cutoff, -10).
	ExpendablePodsPriorityCutoff int32
}

// DefaultOptions are the upstream Cluster Autoscaler defaults.
func DefaultOptions() Options {
	return Options{
		ScaleUp:                      scaleup.DefaultOptions(),
		ScaleDown:                    scaledown.DefaultOptions(),
		ClusterState:                 clusterstate.DefaultOptions(),
		ScaleDownEnabled:             true,
		Limits:                       limits.Default(),
		ExpendablePodsPriorityCutoff: -10,
	}
}

// Autoscaler holds what lives from one loop to the next: the node-group
// state, the unneeded-node clocks and the expanders' random source.
type Autoscaler struct {
	opts  Options
	state *clusterstate.State
	up    *scaleup.Planner
	down  *scaledown.Planner
}

// New validates opts and builds both planners.
func New(opts Options) (*Autoscaler, error) {
	opts.ScaleUp.Limits, opts.ScaleDown.Limits = opts.Limits, opts.Limits
	opts.ScaleUp.ExpendablePodsPriorityCutoff = opts.ExpendablePodsPriorityCutoff
	opts.ScaleDown.ExpendablePodsPriorityCutoff = opts.ExpendablePodsPriorityCutoff
	up, err := scaleup.NewPlanner(opts.ScaleUp)
	if err != nil {
		return nil, err
	}
	down, err := scaledown.NewPlanner(opts.ScaleDown)
	if err != nil {
		return nil, err
	}
	return &Autoscaler{opts: opts, state: clusterstate.New(opts.ClusterState), up: up, down: down}, nil
}

// State is the node-group state; the shell records what it carried out.
func (a *Autoscaler) State() *clusterstate.State { return a.state }

// SetPriorities gives the priority expander a new configuration, read
// again by the shell when its ConfigMap changes.
func (a *Autoscaler) SetPriorities(p *expander.Priorities) error {
	if err := a.up.SetPriorities(p); err != nil {
		return err
	}
	a.opts.ScaleUp.Priorities = p
	return nil
}

// Input is one loop's view of the cluster.
type Input struct {
	Now      time.Time
	Snapshot *snapshot.Snapshot
	// Pending are the pods the scheduler marked unschedulable.
	Pending    []*v1.Pod
	DaemonSets []*appsv1.DaemonSet
	PDBs       []*policyv1.PodDisruptionBudget
	// Replicas are the replica counts of the ReplicaSets and
	// ReplicationControllers (--min-replica-count); nil when unknown.
	Replicas drain.Replicas
	// Deleting are node removals the actuator has in flight.
	Deleting []scaledown.Deletion
}

// Plan is both halves' decisions.
type Plan struct {
	ScaleUp   scaleup.Plan
	ScaleDown scaledown.Plan
	// ScaleDownSkipped says why scale-down did not run this loop ("" if it did).
	ScaleDownSkipped string
}

// RunOnce decides one loop. Provisioning timeouts are settled first (they
// back groups off and shrink their targets), then scale-up plans; scale-down
// runs only when this loop grows nothing, on a view where the pending pods
// that fit on existing nodes already take their room. The snapshot is
// unchanged afterwards.
func (a *Autoscaler) RunOnce(in Input) (Plan, error) {
	var plan Plan
	shrinks := a.state.Update(in.Snapshot, in.Now)
	up, err := a.up.Plan(scaleup.Input{Now: in.Now, Snapshot: in.Snapshot, Pending: in.Pending,
		DaemonSets: in.DaemonSets, State: a.state, Shrinks: shrinks})
	if err != nil {
		return plan, fmt.Errorf("scale-up: %w", err)
	}
	plan.ScaleUp = up
	switch {
	case !a.opts.ScaleDownEnabled:
		plan.ScaleDownSkipped = "scale-down is disabled (--scale-down-enabled=false)"
	case len(up.ScaleUps) > 0:
		plan.ScaleDownSkipped = "this loop scales up"
	default:
		down, err := a.scaleDown(in, up)
		if err != nil {
			return plan, fmt.Errorf("scale-down: %w", err)
		}
		plan.ScaleDown = down
	}
	return plan, nil
}

// scaleDown plans removals with the pending pods that will schedule on
// registered nodes placed there, so their room is not given away.
func (a *Autoscaler) scaleDown(in Input, up scaleup.Plan) (scaledown.Plan, error) {
	s := in.Snapshot
	s.Fork()
	defer func() { _ = s.Revert() }()
	for i, pod := range up.WillSchedule {
		node := up.Placements[i]
		if s.Node(node) == nil {
			continue // an upcoming node: not in the real cluster
		}
		pi, err := snapshot.NewPodInfo(pod)
		if err != nil {
			return scaledown.Plan{}, err
		}
		if err := s.AddPodInfo(pi, node); err != nil {
			return scaledown.Plan{}, err
		}
	}
	return a.down.Plan(scaledown.Input{
		Now: in.Now, Snapshot: s, PDBs: in.PDBs, Replicas: in.Replicas, Deleting: in.Deleting,
		LastScaleUp: a.state.LastScaleUp, LastScaleDelete: a.state.LastScaleDownDelete,
		LastScaleDownFailure: a.state.LastScaleDownFailure,
	}), nil
}
