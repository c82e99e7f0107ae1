// Package predicates answers whether a pod can be placed on a node the way
// kube-scheduler's filter plugins would: node resources, taints and
// tolerations, node selector and required node affinity, unschedulable
// nodes, host ports, volume restrictions (ReadWriteOncePod claims in use,
// in-tree disks mounted twice), CSI attach limits per driver (CSINodes),
// volume binding (bound volumes' node affinity, claims bound at the first
// consumer), volume zones, topology spread (DoNotSchedule),
// required inter-pod affinity and anti-affinity, and Dynamic Resource
// Allocation (devices for the pod's ResourceClaims, allocated by
// k8s.io/dynamic-resource-allocation's structured allocator as
// kube-scheduler's DynamicResources plugin does).
//
// Prepare does per pod what the scheduler does in PreFilter; Check does per
// node what it does in Filter and allocates nothing. A PodCheck follows the
// snapshot: when the snapshot changes, the state that depends on other pods
// and nodes is recomputed on the next Check.
package predicates

import (
	"sort"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Checker checks pods against the nodes of one snapshot.
type Checker struct {
	snap *snapshot.Snapshot
	// dra is made for the first pod with resource claims.
	dra *draEnv
}

// New returns a Checker over s.
func New(s *snapshot.Snapshot) *Checker { return &Checker{snap: s} }

// PodCheck is one pod made ready to be checked against many nodes.
// It is not safe for concurrent use.
type PodCheck struct {
	// checker holds the snapshot (checker.snap) and the DRA allocator's
	// shared state.
	checker *Checker
	pi      *snapshot.PodInfo
	pod     *v1.Pod

	scalars                []scalarRequest
	nodeAffinity           nodeaffinity.RequiredNodeAffinity
	hasNodeAffinity        bool
	toleratesUnschedulable bool

	// State derived from the rest of the snapshot, valid for generation.
	generation uint64
	fresh      bool
	podFailure Result // a failure that holds on every node (PreFilter)
	// vol is set for pods that mount claims or in-tree disks only: the
	// others pay a nil test for every volume check.
	vol      *volumeState
	spread   spreadState
	affinity affinityState
	// dra is set for pods with resource claims only: the others pay
	// nothing for Dynamic Resource Allocation.
	dra *draCheck
}

type scalarRequest struct {
	name v1.ResourceName
	qty  int64
}

// discard is the logger handed to component-helpers, which only logs at
// debug levels we do not surface.
var discard = logr.Discard()

// Prepare validates pod and computes what checking it needs. An invalid pod
// is an error that names the field.
func (c *Checker) Prepare(pod *v1.Pod) (*PodCheck, error) {
	pi, err := snapshot.NewPodInfo(pod)
	if err != nil {
		return nil, err
	}
	return c.PreparePodInfo(pi), nil
}

// PreparePodInfo is Prepare for a pod whose PodInfo is already computed.
func (c *Checker) PreparePodInfo(pi *snapshot.PodInfo) *PodCheck {
	pod := pi.Pod
	pc := &PodCheck{checker: c, pi: pi, pod: pod}
	if len(pod.Spec.ResourceClaims) > 0 {
		pc.dra = &draCheck{}
	}
	for name, q := range pi.Requests.Scalar {
		if q != 0 {
			pc.scalars = append(pc.scalars, scalarRequest{name, q})
		}
	}
	sort.Slice(pc.scalars, func(i, j int) bool { return pc.scalars[i].name < pc.scalars[j].name })
	pc.nodeAffinity = nodeaffinity.GetRequiredNodeAffinity(pod)
	a := pod.Spec.Affinity
	pc.hasNodeAffinity = len(pod.Spec.NodeSelector) > 0 ||
		(a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil)
	pc.toleratesUnschedulable = tolerates(pod.Spec.Tolerations, &unschedulableTaint)
	claims, restricted, limited := mountsClaims(pod), needsRestrictions(pod), needsLimits(pod)
	if claims || restricted || limited {
		pc.vol = &volumeState{claims: claims, restricted: restricted, limited: limited}
	}
	return pc
}

// PodInfo returns the pod being checked.
func (pc *PodCheck) PodInfo() *snapshot.PodInfo { return pc.pi }

// Check tells whether the pod fits on ni, and if not, why. The first failing
// predicate is reported, in kube-scheduler's filter order.
func (pc *PodCheck) Check(ni *snapshot.NodeInfo) Result {
	if !pc.fresh || pc.generation != pc.checker.snap.Generation() {
		pc.refresh()
	}
	if !pc.podFailure.Fits() {
		return pc.podFailure
	}
	if r := pc.checkNodeLocal(ni); !r.Fits() {
		return r
	}
	if pc.vol != nil {
		if r := pc.checkVolumes(ni); !r.Fits() {
			return r
		}
	}
	if r := pc.spread.check(pc.pod, ni.Node); !r.Fits() {
		return r
	}
	if r := pc.affinity.check(pc.pod, ni.Node); !r.Fits() || pc.dra == nil {
		return r
	}
	return pc.checkDRA(ni)
}

// LacksRoom reports whether ni has too little of a resource the pod
// requests, or no room for another pod: NodeResourcesFit fails there, so
// Check and CheckNodeLocal fail too. A scan for the first node that fits
// passes such nodes over without the other checks; the answer it reports
// for a node must still come from Check, which names the first check that
// fails.
func (pc *PodCheck) LacksRoom(ni *snapshot.NodeInfo) bool { return !pc.checkResources(ni).Fits() }

// CheckNodeLocal runs only the checks that depend on the node alone
// (unschedulable, node name, taints, node affinity, ports, resources).
// Planners use it to rule nodes out before the full Check.
func (pc *PodCheck) CheckNodeLocal(ni *snapshot.NodeInfo) Result { return pc.checkNodeLocal(ni) }

// refresh recomputes the state that depends on other pods, nodes, volumes
// and namespaces: what kube-scheduler computes in PreFilter.
func (pc *PodCheck) refresh() {
	pc.generation = pc.checker.snap.Generation()
	pc.fresh = true
	pc.podFailure = Result{}
	if pc.vol != nil {
		if r := pc.prepareVolumeState(); !r.Fits() {
			pc.podFailure = r
			return
		}
	}
	pc.spread.prepare(pc.checker.snap, pc.pod, pc.nodeAffinity)
	pc.affinity.prepare(pc.checker.snap, pc.pi)
	if pc.dra != nil {
		pc.podFailure = pc.prepareDRA()
	}
}
