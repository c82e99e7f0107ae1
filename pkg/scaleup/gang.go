package scaleup

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/estimator"
	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/provisioningrequest"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Gang is a set of pods that gets room all together or not at all: the
// pods of a ProvisioningRequest.
type Gang struct {
	// Key names the gang (its request's "namespace/name").
	Key  string
	Pods []*v1.Pod
	// CheckOnly looks for room on the registered nodes only and adds none
	// (the check-capacity class).
	CheckOnly bool
	// Queued gets new nodes of a group with queued capacity, always, and
	// asks the cloud's queue for them (the queued-provisioning class).
	Queued *QueuedScaleUp
}

// GangOutcome is what a gang got.
type GangOutcome string

// Gang outcomes.
const (
	// GangFits: every pod fits the registered nodes.
	GangFits GangOutcome = "Fits"
	// GangFitsUpcoming: every pod fits, some on nodes already on their way.
	GangFitsUpcoming GangOutcome = "FitsUpcoming"
	// GangScaledUp: the pods that fit nowhere get new nodes, all of them.
	GangScaledUp GangOutcome = "ScaledUp"
	// GangNoRoom: no room for every pod; nothing was added.
	GangNoRoom GangOutcome = "NoRoom"
)

// GangResult is what one gang got, and why not when it got nothing.
type GangResult struct {
	Key     string
	Outcome GangOutcome
	// ScaleUps are the gang's nodes (already part of Plan.ScaleUps).
	ScaleUps []ScaleUp
	// Reasons say why there was no room: per group, or for the cluster.
	Reasons []GroupReason
}

// Message joins the reasons.
func (g GangResult) Message() string { return PendingPods{Reasons: g.Reasons}.Message() }

// HeldPod is a gang's or a booking's pod placed on a node: scale-down must
// leave its room.
type HeldPod struct {
	Pod  *v1.Pod
	Node string
}

// Reasons of gangs.
const (
	// ReasonConsumesRequest: the pod consumes a ProvisioningRequest, which
	// brings its capacity; it triggers no scale-up of its own.
	ReasonConsumesRequest Reason = "ConsumesProvisioningRequest"
	// ReasonAllOrNothing: the group can take some of a gang's pods, not all.
	ReasonAllOrNothing Reason = "AllOrNothing"
	// ReasonNoRoom: a check-capacity gang does not fit the cluster's nodes.
	ReasonNoRoom Reason = "CapacityNotFound"
)

// consumerReason is why a pod that consumes a request is left to it.
func consumerReason(pod *v1.Pod) (GroupReason, bool) {
	name, ok := provisioningrequest.ConsumerOf(pod)
	if !ok {
		return GroupReason{}, false
	}
	return GroupReason{Reason: ReasonConsumesRequest, Message: fmt.Sprintf(
		"pod consumes ProvisioningRequest %s/%s, which brings its capacity; it triggers no scale-up of its own", pod.Namespace, name)}, true
}

// holdBooked places the pods of bookings where they fit, as the scheduler
// would place them, so that no other pod plans on their room. Pods that
// fit nowhere yet stay for the next call (after the upcoming nodes).
func (r *run) holdBooked() error {
	if len(r.booked) == 0 {
		return nil
	}
	classes, err := groupClasses(r.snap, r.booked)
	if err != nil {
		return err
	}
	r.booked = r.booked[:0:0]
	for _, c := range classes {
		n := r.placeOnNodes(c, r.checker.PreparePodInfo(c.Rep()))
		r.noteHeld(c.Pods[:n])
		r.booked = append(r.booked, podsOf(c.Pods[n:])...)
	}
	return nil
}

func (r *run) noteHeld(pis []*snapshot.PodInfo) {
	for _, pi := range pis {
		r.plan.Held = append(r.plan.Held, HeldPod{Pod: pi.Pod, Node: r.snap.NodeOf(pi).Name()})
	}
}

// gangs handles the gangs of one kind (check-only ones before the upcoming
// nodes are added, atomic ones after), in order: each takes its room
// before the next looks.
func (r *run) gangs(checkOnly bool) error {
	for _, g := range r.in.Gangs {
		if g.CheckOnly != checkOnly {
			continue
		}
		res, err := r.gang(g)
		if err != nil {
			return fmt.Errorf("gang %s: %w", g.Key, err)
		}
		r.plan.Gangs = append(r.plan.Gangs, res)
	}
	return nil
}

// gang places a gang on the nodes there are; what does not fit gets new
// nodes of one group (or similar groups), all or none.
func (r *run) gang(g Gang) (GangResult, error) {
	res := GangResult{Key: g.Key}
	classes, err := groupClasses(r.snap, g.Pods)
	if err != nil {
		return res, err
	}
	r.snap.Fork()
	var left []*Class
	var placed []*snapshot.PodInfo
	for _, c := range classes {
		if g.Queued != nil {
			// Queued capacity comes as new nodes of its own.
			left = append(left, c)
			continue
		}
		n := r.placeOnNodes(c, r.checker.PreparePodInfo(c.Rep()))
		placed = append(placed, c.Pods[:n]...)
		if n < len(c.Pods) {
			left = append(left, &Class{Pods: c.Pods[n:]})
		}
	}
	switch {
	case len(left) == 0:
		res.Outcome = GangFits
		if r.onUpcoming(placed) {
			res.Outcome = GangFitsUpcoming
		}
	case g.CheckOnly:
		res.Outcome = GangNoRoom
		res.Reasons = []GroupReason{{Reason: ReasonNoRoom, Message: fmt.Sprintf(
			"%d of %d pods fit the cluster's nodes; no node is added for check-capacity", len(placed), len(g.Pods))}}
	default:
		ups, reasons, err := r.gangScaleUp(g, left)
		if err != nil {
			_ = r.snap.Revert()
			return res, err
		}
		res.ScaleUps, res.Reasons = ups, reasons
		res.Outcome = GangScaledUp
		if len(ups) == 0 {
			res.Outcome = GangNoRoom
		}
	}
	if res.Outcome == GangNoRoom {
		return res, r.snap.Revert()
	}
	r.noteHeld(placed)
	r.gangUps = append(r.gangUps, res.ScaleUps...)
	return res, r.snap.Commit()
}

// onUpcoming reports whether any of the pods sits on a node that is not
// registered yet.
func (r *run) onUpcoming(pis []*snapshot.PodInfo) bool {
	for _, pi := range pis {
		if r.in.Snapshot.Node(r.snap.NodeOf(pi).Name()) == nil || r.isStarting(r.snap.NodeOf(pi).Name()) {
			return true
		}
	}
	return false
}

func (r *run) isStarting(node string) bool {
	for _, ni := range r.starting {
		if ni.Name() == node {
			return true
		}
	}
	return false
}

// gangScaleUp estimates every group for the pods left, keeps the groups
// that take all of them, lets the expanders choose, and adds the chosen
// nodes to the fork with the pods on them. No scale-up and the reasons
// when no group takes them all.
func (r *run) gangScaleUp(g Gang, left []*Class) ([]ScaleUp, []GroupReason, error) {
	need := 0
	podSets := make([][]*snapshot.PodInfo, len(left))
	for i, c := range left {
		podSets[i] = c.Pods
		need += len(c.Pods)
	}
	var reasons []GroupReason
	var cands []candidate
	totals := r.clusterTotals()
	for _, grp := range r.snap.NodeGroups() {
		why, maxNodes, bound := r.groupHeadroom(grp, totals, g.Queued != nil)
		if why.Reason != "" {
			why.Group = grp.ID
			reasons = append(reasons, why)
			continue
		}
		est, err := estimator.Pack(r.snap, r.templates[grp.ID], podSets, estimator.Options{MaxNodes: maxNodes})
		if err != nil {
			return nil, nil, err
		}
		if est.PodCount == need {
			cands = append(cands, candidate{option: expander.Option{Group: grp, NodeCount: est.NodeCount,
				PodCount: est.PodCount, Requested: est.Requested}, placed: est.Placed})
			continue
		}
		reasons = append(reasons, gangShortfall(grp.ID, est, need, bound))
	}
	cands = preferCPUGroupsForCPUPods(cands, left)
	options := make([]expander.Option, len(cands))
	for i := range cands {
		options[i] = cands[i].option
	}
	chosen, ok, _ := r.chain.ChooseExplained(options)
	if !ok {
		sortReasons(reasons)
		return nil, reasons, nil
	}
	var ups []ScaleUp
	if g.Queued != nil {
		// One queued request to one group: the cloud adds all its nodes
		// together or none.
		ups = []ScaleUp{{Group: chosen.Group.ID, Delta: chosen.NodeCount, NewTarget: chosen.Group.TargetSize + chosen.NodeCount,
			Pods: chosen.PodCount, Why: "queued capacity for " + g.Key, Queued: g.Queued}}
	} else {
		ups = r.balance(chosen, options, affinityKeys(g.Pods))
	}
	for i := range ups {
		ups[i].Gangs = []string{g.Key}
	}
	if err := r.addGangNodes(g.Key, ups, left); err != nil {
		// The gang's fork is reverted: nothing of this attempt stays.
		return nil, []GroupReason{{Group: chosen.Group.ID, Reason: ReasonAllOrNothing, Message: err.Error()}}, nil
	}
	return ups, nil, nil
}

// gangShortfall says why a group takes only some of a gang's pods.
func gangShortfall(group string, est estimator.Estimate, need int, bound string) GroupReason {
	for _, res := range est.Reasons {
		if !res.Fits() {
			return GroupReason{Group: group, Reason: ReasonNotFit, Predicate: res.Predicate.String(), Message: res.Message("template")}
		}
	}
	msg := fmt.Sprintf("only %d of %d pods fit on new nodes of this group", est.PodCount, need)
	if est.LimitReached && bound != "" {
		msg = fmt.Sprintf("only %d of %d pods fit on the %d new node(s) that %s allows", est.PodCount, need, est.NodeCount, bound)
	}
	return GroupReason{Group: group, Reason: ReasonAllOrNothing, Message: msg + "; a ProvisioningRequest gets all its pods' nodes or none"}
}

// addGangNodes adds the scale-ups' nodes to the fork, raises the groups'
// targets there (so later estimates count them), and places the pods on
// them.
func (r *run) addGangNodes(key string, ups []ScaleUp, left []*Class) error {
	for _, su := range ups {
		grp := *r.snap.NodeGroup(su.Group)
		for i := 0; i < su.Delta; i++ {
			if _, err := r.templates[su.Group].AddNode(r.snap, fmt.Sprintf("gang-%s-%s-%d-%d", key, su.Group, grp.TargetSize, i)); err != nil {
				return err
			}
		}
		grp.TargetSize += su.Delta
		if err := r.snap.SetNodeGroup(grp); err != nil {
			return err
		}
	}
	for _, c := range left {
		if n := r.placeOnNodes(c, r.checker.PreparePodInfo(c.Rep())); n < len(c.Pods) {
			return fmt.Errorf("%d of %d pods did not fit the nodes estimated for them", len(c.Pods)-n, len(c.Pods))
		}
	}
	return nil
}

// mergeGangScaleUps adds the gangs' scale-ups to the plan's, one per
// group: their deltas add up.
func (r *run) mergeGangScaleUps() {
	if len(r.gangUps) == 0 {
		return
	}
	byGroup := map[string]int{}
	for i, su := range r.plan.ScaleUps {
		byGroup[su.Group] = i
	}
	for _, su := range r.gangUps {
		i, ok := byGroup[su.Group]
		if su.Queued != nil {
			// Each queued request is the cloud's own: never merged.
			r.plan.ScaleUps = append(r.plan.ScaleUps, su)
			continue
		}
		if !ok {
			byGroup[su.Group] = len(r.plan.ScaleUps)
			r.plan.ScaleUps = append(r.plan.ScaleUps, su)
			continue
		}
		m := &r.plan.ScaleUps[i]
		m.Delta += su.Delta
		m.NewTarget = max(m.NewTarget, su.NewTarget)
		m.Pods += su.Pods
		m.Gangs = append(m.Gangs, su.Gangs...)
		if !strings.Contains(m.Why, su.Why) {
			m.Why += "; " + su.Why
		}
	}
	sort.SliceStable(r.plan.ScaleUps, func(i, j int) bool { return r.plan.ScaleUps[i].Group < r.plan.ScaleUps[j].Group })
}
