package predicates

import (
	"context"
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// celCacheSize is how many compiled CEL expressions a Checker keeps; the
// scheduler keeps 10, a planner sees more distinct classes and requests.
const celCacheSize = 64

// draCheck is the DynamicResources filter's state for a pod with resource
// claims: what kube-scheduler's plugin computes in PreFilter, plus the last
// allocation Check found so that Place can bind the pod with it.
type draCheck struct {
	// available are the node selectors of the pod's allocated claims.
	available []*nodeaffinity.NodeSelector
	// toAllocate are the claims still to allocate (a template's spec for a
	// claim still to be made), and toAllocateIndex their entries in
	// pod.spec.resourceClaims.
	toAllocate      []*resourceapi.ResourceClaim
	toAllocateIndex []int
	// needDevices is set when some claim to allocate requests a device, so
	// a node with no ResourceSlice fails at once; minDevices is how many
	// free devices the claims take at least, so a node with fewer fails
	// without running the allocator (nodes fill up in a simulation, and a
	// full node must cost little).
	needDevices bool
	minDevices  int

	// list and held are reused from check to check.
	list []*resourceapi.ResourceSlice
	held sets.Set[structured.DeviceID]

	lastNode   *snapshot.NodeInfo
	lastGen    uint64
	lastResult []resourceapi.AllocationResult
}

// draEnv is what allocation needs from the Checker, made on first use.
type draEnv struct {
	ctx      context.Context
	celCache *cel.Cache
	classes  classLister
	// noShared and noCapacity are the allocated state's parts for
	// consumable capacity, which stays off: empty, never written.
	noShared   sets.Set[structured.SharedDeviceID]
	noCapacity structured.ConsumedCapacityCollection
}

func (c *Checker) draEnv() *draEnv {
	if c.dra == nil {
		c.dra = &draEnv{
			ctx:      klog.NewContext(context.Background(), discard),
			celCache: cel.NewCache(celCacheSize, cel.Features{}),
			classes:  classLister{c.snap},
			noShared: sets.New[structured.SharedDeviceID](), noCapacity: structured.NewConsumedCapacityCollection(),
		}
	}
	return c.dra
}

// classLister serves the snapshot's DeviceClasses to the allocator.
type classLister struct{ s *snapshot.Snapshot }

func (l classLister) List() ([]*resourceapi.DeviceClass, error) { return l.s.DeviceClasses(), nil }

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c := l.s.DeviceClass(name); c != nil {
		return c, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

func claimFailure(format string, args ...any) Result {
	return Result{Predicate: DynamicResources, Reason: ReasonClaimUnavailable, Detail: fmt.Sprintf(format, args...)}
}

// prepareDRA resolves the pod's claims as the plugin's PreFilter does. A
// claim allocated for this very pod by an earlier placement in the same
// simulation, and held by it alone, is allocated again: Check then answers
// for an equal pod of the same class (its own claim of the same spec),
// which is how the planners reuse one PodCheck for a class.
func (pc *PodCheck) prepareDRA() Result {
	d := pc.dra
	d.available, d.toAllocate, d.toAllocateIndex, d.needDevices, d.minDevices = d.available[:0], d.toAllocate[:0], d.toAllocateIndex[:0], false, 0
	d.lastNode = nil
	claims, err := pc.checker.snap.PodClaims(pc.pod)
	if err != nil {
		return claimFailure("%v", err)
	}
	features := pc.checker.snap.DRAFeatures()
	for i := range claims {
		c := &claims[i]
		claim := c.Claim
		if claim != nil {
			if claim.DeletionTimestamp != nil {
				return claimFailure("resourceclaim %s/%s is being deleted", claim.Namespace, claim.Name)
			}
			if c.Generated && !snapshot.IsSimulatedClaim(claim) && !metav1.IsControlledBy(claim, pc.pod) {
				return claimFailure("resourceclaim %s/%s was not created for pod %s (pod is not owner)",
					claim.Namespace, claim.Name, snapshot.PodKey(pc.pod))
			}
			if a := claim.Status.Allocation; a != nil && !pc.heldBySelf(claim) {
				if a.NodeSelector != nil {
					sel, err := nodeaffinity.NewNodeSelector(a.NodeSelector)
					if err != nil {
						return claimFailure("resourceclaim %s/%s: allocation node selector: %v", claim.Namespace, claim.Name, err)
					}
					d.available = append(d.available, sel)
				}
				continue
			}
		}
		spec := c.Spec()
		if r := validateClasses(pc.checker.snap, spec, features); !r.Fits() {
			return r
		}
		obj := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: pc.pod.Namespace, Name: c.Name}, Spec: *spec}
		if claim != nil {
			obj.ObjectMeta, obj.UID = claim.ObjectMeta, claim.UID
		}
		d.toAllocate = append(d.toAllocate, obj)
		d.toAllocateIndex = append(d.toAllocateIndex, c.Index)
		d.needDevices = d.needDevices || len(spec.Devices.Requests) > 0
		if k := minFreeDevices(spec); k > 0 && d.minDevices >= 0 {
			d.minDevices += k
		} else if k == 0 && hasAllRequest(spec) {
			d.minDevices = -1 // the allocator must see every node
		}
	}
	return Result{}
}

func hasAllRequest(spec *resourceapi.ResourceClaimSpec) bool {
	for _, r := range spec.Devices.Requests {
		if r.Exactly != nil && r.Exactly.AllocationMode == resourceapi.DeviceAllocationModeAll {
			return true
		}
		for _, sub := range r.FirstAvailable {
			if sub.AllocationMode == resourceapi.DeviceAllocationModeAll {
				return true
			}
		}
	}
	return false
}

// minFreeDevices is the fewest free devices a claim can be allocated:
// every ExactCount request takes its count, a list of alternatives its
// smallest, admin access none. A claim with a request for all devices
// gives 0: the allocator must see such claims on every node, since it
// refuses some of them (pools being updated) with an error that aborts
// kube-scheduler's whole cycle, not just the node.
func minFreeDevices(spec *resourceapi.ResourceClaimSpec) int {
	n := 0
	all := false
	one := func(mode resourceapi.DeviceAllocationMode, count int64, admin *bool) int {
		switch {
		case admin != nil && *admin:
			return 0
		case mode == resourceapi.DeviceAllocationModeExactCount:
			return int(count)
		}
		all = true
		return 1
	}
	for _, r := range spec.Devices.Requests {
		switch {
		case r.Exactly != nil:
			n += one(r.Exactly.AllocationMode, r.Exactly.Count, r.Exactly.AdminAccess)
		case len(r.FirstAvailable) > 0:
			least := -1
			for _, sub := range r.FirstAvailable {
				if k := one(sub.AllocationMode, sub.Count, nil); least < 0 || k < least {
					least = k
				}
			}
			n += least
		}
	}
	if all {
		return 0
	}
	return n
}

// heldBySelf: the claim is reserved for the pod being checked alone, and
// that pod is placed in the snapshot (a simulation placed it).
func (pc *PodCheck) heldBySelf(claim *resourceapi.ResourceClaim) bool {
	return snapshot.ReservedOnlyFor(claim, pc.pod) && pc.checker.snap.Pod(pc.pod.Namespace, pc.pod.Name) != nil
}

// validateClasses fails when a class a request names does not exist, as
// the plugin's PreFilter does.
func validateClasses(s *snapshot.Snapshot, spec *resourceapi.ResourceClaimSpec, f snapshot.DRAFeatures) Result {
	for _, r := range spec.Devices.Requests {
		switch {
		case r.Exactly != nil:
			if s.DeviceClass(r.Exactly.DeviceClassName) == nil {
				return claimFailure("request %s: device class %s does not exist", r.Name, r.Exactly.DeviceClassName)
			}
		case len(r.FirstAvailable) > 0:
			if !f.PrioritizedList {
				return claimFailure("request %s: has subrequests, but the DRAPrioritizedList feature is disabled", r.Name)
			}
			for _, sub := range r.FirstAvailable {
				if s.DeviceClass(sub.DeviceClassName) == nil {
					return claimFailure("request %s/%s: device class %s does not exist", r.Name, sub.Name, sub.DeviceClassName)
				}
			}
		}
	}
	return Result{}
}

// checkDRA is the plugin's Filter: allocated claims must be available on
// the node, the others must be allocatable from its devices.
func (pc *PodCheck) checkDRA(ni *snapshot.NodeInfo) Result {
	d := pc.dra
	for _, sel := range d.available {
		if sel.Match(ni.Node) {
			continue
		}
		// kube-scheduler still runs the allocator for the other claims,
		// and an error there aborts the pod's cycle rather than refusing
		// the node.
		if len(d.toAllocate) > 0 {
			r := pc.allocateDRA(ni)
			d.lastNode = nil // the pod does not fit here, whatever was allocated
			if r.Reason == ReasonInvalidClaim {
				return r
			}
		}
		return Result{Predicate: DynamicResources, Reason: ReasonClaimNotOnNode}
	}
	if len(d.toAllocate) == 0 {
		return Result{}
	}
	return pc.allocateDRA(ni)
}

// allocateDRA allocates the claims to allocate from the node's devices
// (the scheduler's allocator run in Filter) and keeps the result for Place.
func (pc *PodCheck) allocateDRA(ni *snapshot.NodeInfo) Result {
	d := pc.dra
	if d.lastNode == ni && d.lastGen == pc.checker.snap.Generation() {
		return Result{} // allocated here already at this generation
	}
	slices := pc.checker.snap.SlicesFor(ni.Name())
	if d.needDevices && slices.Len() == 0 {
		return Result{Predicate: DynamicResources, Reason: ReasonCannotAllocate}
	}
	if d.minDevices > 0 {
		free := 0
		slices.Each(func(_ *resourceapi.ResourceSlice, ids []structured.DeviceID) {
			for _, id := range ids {
				if !pc.checker.snap.DeviceAllocated(id) {
					free++
				}
			}
		})
		if free < d.minDevices {
			return Result{Predicate: DynamicResources, Reason: ReasonCannotAllocate}
		}
	}
	list := d.list[:0]
	if d.held == nil {
		d.held = sets.New[structured.DeviceID]()
	}
	held := d.held
	clear(held)
	slices.Each(func(sl *resourceapi.ResourceSlice, ids []structured.DeviceID) {
		list = append(list, sl)
		for _, id := range ids {
			if pc.checker.snap.DeviceAllocated(id) {
				held.Insert(id)
			}
		}
	})
	d.list = list
	env := pc.checker.draEnv()
	state := structured.AllocatedState{AllocatedDevices: held, AllocatedSharedDeviceIDs: env.noShared, AggregatedCapacity: env.noCapacity}
	alloc, err := structured.NewAllocator(env.ctx, pc.checker.snap.DRAFeatures().Allocator(), state, env.classes, list, env.celCache)
	if err != nil {
		return Result{Predicate: DynamicResources, Reason: ReasonInvalidClaim, Detail: err.Error()}
	}
	res, err := allocateRecovering(env.ctx, alloc, ni, d.toAllocate)
	switch {
	case errors.Is(err, structured.ErrFailedAllocationOnNode):
		return Result{Predicate: DynamicResources, Reason: ReasonCannotAllocate, Detail: err.Error()}
	case err != nil:
		// kube-scheduler aborts the pod's scheduling cycle: a broken CEL
		// expression or class fails on every node.
		return Result{Predicate: DynamicResources, Reason: ReasonInvalidClaim, Detail: err.Error()}
	case len(res) != len(d.toAllocate):
		return Result{Predicate: DynamicResources, Reason: ReasonCannotAllocate}
	}
	d.lastNode, d.lastGen, d.lastResult = ni, pc.checker.snap.Generation(), res
	return Result{}
}

// Place binds pi to ni in the snapshot. pi is the pod the PodCheck was
// prepared for or one equal to it for scheduling (an equivalence class
// member: same requests, resource claim entries with claims of the same
// specs). Its claims that need devices are allocated the devices Check
// found on ni, and every claim is reserved for it; pods without claims are
// bound as snapshot.AddPodInfo binds them. Place checks again when the
// snapshot changed since the last Check of ni, and fails if pi does not fit.
func (pc *PodCheck) Place(pi *snapshot.PodInfo, ni *snapshot.NodeInfo) error {
	if pc.dra == nil || len(pi.Pod.Spec.ResourceClaims) == 0 {
		return pc.checker.snap.AddPodInfo(pi, ni.Name())
	}
	d := pc.dra
	if len(d.toAllocate) > 0 && (d.lastNode != ni || d.lastGen != pc.checker.snap.Generation()) {
		if r := pc.Check(ni); !r.Fits() {
			return fmt.Errorf("pod %s does not fit node %s: %s", snapshot.PodKey(pi.Pod), ni.Name(), r.String())
		}
	}
	var allocs []*resourceapi.AllocationResult
	if len(d.toAllocate) > 0 {
		allocs = make([]*resourceapi.AllocationResult, len(pi.Pod.Spec.ResourceClaims))
		for k, idx := range d.toAllocateIndex {
			if idx < len(allocs) {
				res := d.lastResult[k]
				allocs[idx] = &res
			}
		}
	}
	return pc.checker.snap.AddPodInfoWithClaims(pi, ni.Name(), allocs)
}

// allocateRecovering runs the allocator and turns a panic into an error:
// the v0.35 allocator dereferenced a nil pool when a request for all
// devices (allocationMode All) met devices that consume counters
// (DRAPartitionableDevices), and kube-scheduler crashed there. v0.37
// refuses that claim instead, but the allocator is upstream code that sees
// every claim in the cluster: the autoscaler must not crash on its next
// bug, so a panic fails the claim with the reason.
func allocateRecovering(ctx context.Context, alloc structured.Allocator, ni *snapshot.NodeInfo,
	claims []*resourceapi.ResourceClaim) (res []resourceapi.AllocationResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("the structured allocator failed on node %s: %v", ni.Name(), p)
		}
	}()
	return alloc.Allocate(ctx, ni.Node, claims)
}

// Place binds pi to ni if it fits there, with its claims' devices: for
// callers that place one pod (a pending pod the scheduler will bind, a pod
// of a simulated scheduler) rather than a class. It returns the check's
// result when the pod does not fit, and binds nothing then.
func (c *Checker) Place(pi *snapshot.PodInfo, ni *snapshot.NodeInfo) (Result, error) {
	pc := c.PreparePodInfo(pi)
	if r := pc.Check(ni); !r.Fits() {
		return r, nil
	}
	return Result{}, pc.Place(pi, ni)
}
