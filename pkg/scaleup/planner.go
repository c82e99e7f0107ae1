package scaleup

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/dra"
	"github.com/gpuscale/gpuscale/pkg/estimator"
	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/provisioningrequest"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Input is everything one scale-up pass reads.
type Input struct {
	Now      time.Time
	Snapshot *snapshot.Snapshot
	// Pending are the pods the scheduler marked unschedulable.
	Pending    []*v1.Pod
	DaemonSets []*appsv1.DaemonSet
	// State is read, not changed: backoffs, nodes still starting, and the
	// upcoming nodes of each group as State.Update found them on this
	// snapshot (target decreases decided this loop already applied).
	State *clusterstate.State
	// Readiness is the loop's definition of a ready node; nil classifies
	// as State does.
	Readiness clusterstate.Classifier
	// Gangs get room all together or not at all, in order, before the
	// other pending pods (gang.go). Booked are the pods of bookings: they
	// take their room first and trigger nothing.
	Gangs  []Gang
	Booked []*v1.Pod
}

// Planner plans scale-ups. It keeps only the expander chain (and its
// random source) between calls.
type Planner struct {
	opts  Options
	chain *expander.Chain
	// tally keeps the cluster's totals for the limits from loop to loop.
	tally limits.Tally
}

// NewPlanner validates opts.
func NewPlanner(opts Options) (*Planner, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	chain, err := expander.NewChain(opts.Expander, expander.Config{Priorities: opts.Priorities, Seed: opts.Seed})
	if err != nil {
		return nil, err
	}
	return &Planner{opts: opts, chain: chain}, nil
}

// SetPriorities replaces the priority expander's configuration (the
// ConfigMap changed). The chain is rebuilt; on error the old one stays.
func (p *Planner) SetPriorities(prio *expander.Priorities) error {
	chain, err := expander.NewChain(p.opts.Expander, expander.Config{Priorities: prio, Seed: p.opts.Seed})
	if err != nil {
		return err
	}
	p.opts.Priorities, p.chain = prio, chain
	return nil
}

// run is the working state of one Plan call.
type run struct {
	*Planner
	in        *Input
	snap      *snapshot.Snapshot
	checker   *predicates.Checker
	templates map[string]*estimator.Template
	starting  []*snapshot.NodeInfo
	overdue   []*snapshot.NodeInfo
	plan      Plan
	// booked are the booked pods not placed yet; gangUps the gangs'
	// scale-ups, merged into the plan's at the end.
	booked  []*v1.Pod
	gangUps []ScaleUp
}

// candidate is one group's estimate for the pods left.
type candidate struct {
	option expander.Option
	placed []int
	// bound names the limit that stopped the estimate, "" if none did.
	bound string
}

// Plan decides this loop's scale-ups. The snapshot is forked and reverted:
// it is unchanged afterwards.
func (p *Planner) Plan(in Input) (Plan, error) {
	r := &run{Planner: p, in: &in, snap: in.Snapshot, checker: predicates.New(in.Snapshot), booked: in.Booked}
	pods, nominated := r.admissible(in.Pending)
	noGangs := len(in.Gangs) == 0 && len(in.Booked) == 0
	if len(pods) == 0 && len(nominated) == 0 && noGangs {
		return r.plan, nil
	}
	classes, err := groupClasses(in.Snapshot, pods)
	if err != nil {
		return r.plan, err
	}
	r.snap.Fork()
	defer func() { _ = r.snap.Revert() }()
	r.dropExpendablePods()
	if err := r.placeNominated(nominated); err != nil {
		return r.plan, err
	}
	if len(pods) == 0 && noGangs {
		return r.plan, nil
	}
	if r.templates, err = templatesFor(r.snap, &in); err != nil {
		return r.plan, err
	}
	// Bookings and check-capacity gangs see the registered nodes only;
	// the rest of the bookings and the atomic gangs the upcoming ones too.
	if err := r.holdBooked(); err != nil {
		return r.plan, err
	}
	if err := r.gangs(true); err != nil {
		return r.plan, err
	}
	r.starting, r.overdue = in.State.Starting(r.snap, in.Now, in.Readiness)
	if err := r.addUpcoming(); err != nil {
		return r.plan, err
	}
	if err := r.holdBooked(); err != nil {
		return r.plan, err
	}
	if err := r.gangs(false); err != nil {
		return r.plan, err
	}
	if left := r.filterSchedulable(classes); len(left) > 0 {
		if err := r.scaleUp(left); err != nil {
			return r.plan, err
		}
	}
	r.mergeGangScaleUps()
	return r.plan, nil
}

// admissible drops expendable and too-new pods, noting why, and sets
// aside the pods the scheduler nominated onto a node (preemption.go).
func (r *run) admissible(pending []*v1.Pod) (pods, nominated []*v1.Pod) {
	out := make([]*v1.Pod, 0, len(pending))
	for _, pod := range pending {
		consumer, consumes := consumerReason(pod)
		switch {
		case consumes:
			r.pending([]*v1.Pod{pod}, consumer)
		case r.expendable(pod):
			r.pending([]*v1.Pod{pod}, GroupReason{Reason: ReasonExpendable, Message: fmt.Sprintf(
				"pod priority %d is below --expendable-pods-priority-cutoff %d", priority(pod), r.opts.ExpendablePodsPriorityCutoff)})
		case r.nominatedNode(pod) != "":
			nominated = append(nominated, pod)
		case r.in.Now.Sub(pod.CreationTimestamp.Time) < r.opts.NewPodScaleUpDelay:
			r.pending([]*v1.Pod{pod}, GroupReason{Reason: ReasonTooNew, Message: fmt.Sprintf(
				"pod is younger than --new-pod-scale-up-delay %s", r.opts.NewPodScaleUpDelay)})
		default:
			out = append(out, pod)
		}
	}
	return out, nominated
}

func (r *run) pending(pods []*v1.Pod, reasons ...GroupReason) {
	sortReasons(reasons)
	r.plan.Pending = append(r.plan.Pending, PendingPods{Pods: pods, Reasons: reasons})
}

// scaleUp estimates every group, lets the expanders choose, balances the
// choice over similar groups and explains every pod left.
func (r *run) scaleUp(classes []*Class) error {
	podSets := make([][]*snapshot.PodInfo, len(classes))
	for i, c := range classes {
		podSets[i] = c.Pods
	}
	reasons := make([][]GroupReason, len(classes))
	var cands []candidate
	totals := r.clusterTotals()
	for _, g := range r.snap.NodeGroups() {
		why, maxNodes, bound := r.groupHeadroom(g, totals, false)
		if why.Reason != "" {
			why.Group = g.ID
			for i := range reasons {
				reasons[i] = append(reasons[i], why)
			}
			continue
		}
		est, err := estimator.Pack(r.snap, r.templates[g.ID], podSets, estimator.Options{MaxNodes: maxNodes})
		if err != nil {
			return err
		}
		for i, res := range est.Reasons {
			if !res.Fits() {
				reasons[i] = append(reasons[i], GroupReason{Group: g.ID, Reason: ReasonNotFit,
					Predicate: res.Predicate.String(), Message: res.Message("template")})
			}
		}
		if est.PodCount > 0 {
			cands = append(cands, candidate{
				option: expander.Option{Group: g, NodeCount: est.NodeCount, PodCount: est.PodCount, Requested: est.Requested,
					DeviceUnitsOffered: est.DeviceUnitsOffered, DeviceUnitsTaken: est.DeviceUnitsTaken},
				placed: est.Placed,
			})
			if est.LimitReached {
				cands[len(cands)-1].bound = bound
			}
		}
	}
	cands = preferCPUGroupsForCPUPods(cands, classes)
	options := make([]expander.Option, len(cands))
	for i := range cands {
		options[i] = cands[i].option
	}
	chosen, ok, verdicts := r.chain.ChooseExplained(options)
	if !ok {
		for i, c := range classes {
			r.pending(podsOf(c.Pods), reasons[i]...)
		}
		return nil
	}
	var placed []int
	leftover := "chosen for other pods"
	for _, c := range cands {
		if c.option.Group.ID == chosen.Group.ID {
			placed = c.placed
			if c.bound != "" {
				leftover = c.bound + " reached"
			}
		}
	}
	r.plan.ScaleUps = r.balance(chosen, options, affinityKeys(placedReps(classes, placed)))
	r.plan.Options = verdicts
	for i, c := range classes {
		n := placed[i]
		r.plan.Triggered = append(r.plan.Triggered, podsOf(c.Pods[:n])...)
		if n == len(c.Pods) {
			continue
		}
		rs := append(reasons[i], GroupReason{Group: chosen.Group.ID, Reason: ReasonPartial,
			Message: fmt.Sprintf("%s; %d of %d equivalent pods fit its new nodes", leftover, n, len(c.Pods))})
		for _, other := range cands {
			if other.option.Group.ID != chosen.Group.ID && other.placed[i] > 0 {
				rs = append(rs, GroupReason{Group: other.option.Group.ID, Reason: ReasonOtherGroupChosen, Message: fmt.Sprintf(
					"could take %d of these pods; node group %s was chosen this loop", other.placed[i], chosen.Group.ID)})
			}
		}
		r.pending(podsOf(c.Pods[n:]), rs...)
	}
	return nil
}

// clusterTotals are what the cluster limits count: the nodes of the fork,
// the upcoming ones addUpcoming put there included, and the other nodes
// the groups were asked for (State.Ordered: instances that never joined,
// until the cloud lists them as deleting). Upstream leaves those out, as
// they are to be deleted; but a deletion that fails or is called off
// would then let a scale-up of the same loop take the cluster past its
// limits. Consolidation counts the same nodes (consolidation.Input.Ordered).
func (r *run) clusterTotals() limits.Totals {
	t := r.tally.Of(r.snap)
	for _, g := range r.snap.NodeGroups() {
		if n := r.in.State.Ordered(g.ID) - r.in.State.Upcoming(g.ID); n > 0 {
			t.Add(limits.TemplateTotals(g), n)
		}
	}
	return t
}

// groupHeadroom says why a group cannot grow at all (a zero GroupReason
// when it can), how many nodes it may add, and which limit sets that
// number. queued says the pods are a queued request's: only groups with
// queued capacity take them, and those groups take nothing else.
func (r *run) groupHeadroom(g *snapshot.NodeGroup, totals limits.Totals, queued bool) (GroupReason, int, string) {
	switch {
	case snapshot.Queued(g) && !queued:
		return GroupReason{Reason: ReasonQueuedOnly, Message: "takes queued capacity only (queuedprovisioning): grown for ProvisioningRequests of class " +
			provisioningrequest.ClassQueuedProvisioning}, 0, ""
	case queued && !snapshot.Queued(g):
		return GroupReason{Reason: ReasonNotQueued, Message: "takes no queued capacity (no queuedprovisioning option)"}, 0, ""
	}
	if o := g.Options; o != nil && o.CapacityBlockEnd != nil && !r.in.Now.Before(*o.CapacityBlockEnd) {
		return GroupReason{Reason: ReasonBlockEnded, Message: "its capacity block ended at " + o.CapacityBlockEnd.UTC().Format(time.RFC3339) +
			" (capacityblockend): the cloud launches none of its nodes"}, 0, ""
	}
	if r.templates[g.ID] == nil {
		return GroupReason{Reason: ReasonNoTemplate, Message: "has no template node to scale up from"}, 0, ""
	}
	if b, off := r.in.State.BackedOff(g.ID, r.in.Now); off {
		return GroupReason{Reason: ReasonBackedOff, Message: fmt.Sprintf("backed off until %s after a failed scale-up (%s)",
			b.Until.UTC().Format(time.RFC3339), b.Message)}, 0, ""
	}
	room, bound := g.MaxSize-g.TargetSize, fmt.Sprintf("max size %d", g.MaxSize)
	if room <= 0 {
		return GroupReason{Reason: ReasonMaxSize, Message: bound + " reached"}, 0, bound
	}
	if rr := snapshot.ReservedRoom(g); rr > 0 && rr < room {
		// A reservation is its own offering: the group is grown to it
		// first, and past it in a later loop at its price, so the price
		// expander weighs the reserved nodes apart from the paid ones.
		room, bound = rr, fmt.Sprintf("capacity reservation of %d node(s)", *g.Options.ReservedNodes)
	}
	if r.opts.MaxNodesPerScaleUp < room {
		room, bound = r.opts.MaxNodesPerScaleUp, fmt.Sprintf("--max-nodes-per-scaleup %d", r.opts.MaxNodesPerScaleUp)
	}
	if n, limit := r.opts.Limits.Headroom(totals, limits.TemplateTotals(g)); n < room {
		if n == 0 {
			return GroupReason{Reason: ReasonClusterLimit, Message: fmt.Sprintf("cluster limit %s reached", limit)}, 0, limit
		}
		room, bound = n, "cluster limit "+limit
	}
	return GroupReason{}, room, bound
}

// preferCPUGroupsForCPUPods drops accelerator groups from options that
// schedule no accelerator pod, when a group without accelerators can take
// some pods too: GPU, TPU or Neuron nodes are too dear to hold CPU-only
// work unless nothing else fits.
func preferCPUGroupsForCPUPods(cands []candidate, classes []*Class) []candidate {
	hasCPUGroup := false
	for _, c := range cands {
		if !isAcceleratorGroup(c.option.Group) {
			hasCPUGroup = true
		}
	}
	if !hasCPUGroup {
		return cands
	}
	out := cands[:0:0]
	for _, c := range cands {
		if isAcceleratorGroup(c.option.Group) && !placesGPUPod(c.placed, classes) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// isAcceleratorGroup: the template advertises accelerator resources, or
// its template slices publish accelerator devices (DRA).
func isAcceleratorGroup(g *snapshot.NodeGroup) bool {
	return gpu.Allocatable(g.Template) > 0 || dra.OffersAccelerators(g.TemplateSlices)
}

// placesGPUPod: some placed pod requests accelerators, as extended
// resources or through resource claims.
func placesGPUPod(placed []int, classes []*Class) bool {
	for i, n := range placed {
		rep := classes[i].Rep()
		if n > 0 && (gpu.Requested(&rep.Requests) > 0 || len(rep.Pod.Spec.ResourceClaims) > 0) {
			return true
		}
	}
	return false
}

func podsOf(pis []*snapshot.PodInfo) []*v1.Pod {
	out := make([]*v1.Pod, len(pis))
	for i, pi := range pis {
		out[i] = pi.Pod
	}
	return out
}
