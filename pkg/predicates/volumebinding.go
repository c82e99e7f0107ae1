package predicates

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Annotations the PersistentVolume controller and kube-scheduler write on
// claims (k8s.io/component-helpers/storage/volume, which links client-go).
const (
	annBindCompleted = "pv.kubernetes.io/bind-completed"
	annSelectedNode  = "volume.kubernetes.io/selected-node"
	// noProvisioner is the provisioner of classes for static volumes only.
	noProvisioner = "kubernetes.io/no-provisioner"
)

// bindingState is what kube-scheduler's VolumeBinding plugin computes in
// PreFilter: the pod's bound volumes with their node affinity, and its
// claims still to be bound where the pod lands (WaitForFirstConsumer).
// Only pods that mount a claim fill it.
type bindingState struct {
	bound   []boundVolume
	unbound []unboundClaim
	// scratch carries a node's labels alone: the scheduler matches a
	// volume's node affinity against a node made of the labels only.
	scratch v1.Node
	// matchOrder lists the unbound claims that look for a static volume
	// (those not being provisioned for a node already), smallest request
	// first, the order in which the scheduler hands out static volumes.
	matchOrder []int
	// chosen holds the static volumes earlier claims of the pod took on the
	// node being checked; provision marks the claims left to provision.
	chosen    []*v1.PersistentVolume
	provision []bool
}

// boundVolume is a claim bound to a PersistentVolume.
type boundVolume struct {
	what string // "volume data (claim default/data-0, PersistentVolume pv-1)"
	// selector is the volume's required node affinity; nil lets the volume
	// go anywhere. needs describes it.
	selector *nodeaffinity.LazyErrorNodeSelector
	needs    string
}

// unboundClaim is a claim of a WaitForFirstConsumer class not bound yet:
// it fits a node where an available static volume of its class matches, or
// where its class can provision.
type unboundClaim struct {
	what     string
	pvc      *v1.PersistentVolumeClaim
	selector labels.Selector // the claim's volume selector, nil for none
	class    *storagev1.StorageClass
	// volumes are the static volumes of the claim's class.
	volumes []*v1.PersistentVolume
	// selectedNode is set when provisioning already started for a node.
	selectedNode    string
	hasSelectedNode bool
	// topology are the class's allowed topologies, parsed; a nil entry is a
	// term that selects nothing. allowed describes them.
	topology []labels.Selector
	allowed  string
}

// mountsClaims reports whether the pod mounts a PersistentVolumeClaim or a
// generic ephemeral volume: only those pods pay for the volume checks.
func mountsClaims(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].PersistentVolumeClaim != nil || pod.Spec.Volumes[i].Ephemeral != nil {
			return true
		}
	}
	return false
}

func bindingFailure(format string, args ...any) Result {
	return Result{Predicate: VolumeBinding, Reason: ReasonVolumeUnresolvable, Detail: fmt.Sprintf(format, args...)}
}

// prepareBinding sorts the pod's claims into bound and unbound ones, as
// VolumeBinding's PreFilter does. A claim that is missing, being deleted,
// not the pod's own ephemeral claim, or unbound without waiting for its
// first consumer makes the pod unschedulable everywhere.
func (pc *PodCheck) prepareBinding() Result {
	b := &pc.vol.binding
	b.bound, b.unbound, b.matchOrder = b.bound[:0], b.unbound[:0], b.matchOrder[:0]
	defer b.sortMatchOrder()
	for i := range pc.pod.Spec.Volumes {
		vol := &pc.pod.Spec.Volumes[i]
		pvc, r := pc.volumeClaim(vol)
		if !r.Fits() {
			return r
		}
		if pvc == nil {
			continue
		}
		if r := pc.addClaim(vol.Name, pvc); !r.Fits() {
			return r
		}
	}
	return Result{}
}

// volumeClaim resolves a volume to its claim: nil for volumes of other
// kinds. A generic ephemeral volume is the claim "<pod>-<volume>"; one not
// made yet stands as an unbound claim of its template.
func (pc *PodCheck) volumeClaim(vol *v1.Volume) (*v1.PersistentVolumeClaim, Result) {
	snap, pod := pc.checker.snap, pc.pod
	switch {
	case vol.PersistentVolumeClaim != nil:
		name := vol.PersistentVolumeClaim.ClaimName
		pvc := snap.PersistentVolumeClaim(pod.Namespace, name)
		if pvc == nil {
			return nil, bindingFailure("volume %s: PersistentVolumeClaim %s/%s not found", vol.Name, pod.Namespace, name)
		}
		return pvc, Result{}
	case vol.Ephemeral != nil:
		name := ephemeral.VolumeClaimName(pc.pod, vol)
		pvc := snap.PersistentVolumeClaim(pod.Namespace, name)
		if pvc == nil {
			return pc.ephemeralClaim(vol, name)
		}
		if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
			return nil, bindingFailure("volume %s: %v", vol.Name, err)
		}
		return pvc, Result{}
	}
	return nil, Result{}
}

// ephemeralClaim is the claim the ephemeral volume controller will make for
// vol, with the class the DefaultStorageClass admission plugin would give
// it when the template names none.
func (pc *PodCheck) ephemeralClaim(vol *v1.Volume, name string) (*v1.PersistentVolumeClaim, Result) {
	pvc := ephemeralStandIn(pc.checker.snap, pc.pod, vol, name)
	if pvc == nil {
		return nil, bindingFailure("volume %s: ephemeral volume has no volumeClaimTemplate", vol.Name)
	}
	return pvc, Result{}
}

// ephemeralStandIn is the claim named name that the ephemeral volume
// controller makes for pod's volume vol; nil when vol has no template.
func ephemeralStandIn(snap *snapshot.Snapshot, pod *v1.Pod, vol *v1.Volume, name string) *v1.PersistentVolumeClaim {
	tmpl := vol.Ephemeral.VolumeClaimTemplate
	if tmpl == nil {
		return nil
	}
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pod.Namespace},
		Spec:       tmpl.Spec,
	}
	if pvc.Spec.StorageClassName == nil {
		if def := defaultClass(snap); def != "" {
			pvc.Spec.StorageClassName = &def
		}
	}
	return pvc
}

// defaultClass is the default StorageClass: the newest of those marked
// default, ties broken by name, as the admission plugin chooses.
func defaultClass(s *snapshot.Snapshot) string {
	var best *storagev1.StorageClass
	for _, sc := range s.StorageClasses() {
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" {
			continue
		}
		if best == nil || sc.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			(sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name) {
			best = sc
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}

func (pc *PodCheck) addClaim(volume string, pvc *v1.PersistentVolumeClaim) Result {
	snap := pc.checker.snap
	key := pvc.Namespace + "/" + pvc.Name
	if pvc.Status.Phase == v1.ClaimLost {
		return bindingFailure("volume %s: PersistentVolumeClaim %s is lost: its PersistentVolume %s does not exist", volume, key, pvc.Spec.VolumeName)
	}
	if pvc.DeletionTimestamp != nil {
		return bindingFailure("volume %s: PersistentVolumeClaim %s is being deleted", volume, key)
	}
	if pvc.Spec.VolumeName != "" && metav1.HasAnnotation(pvc.ObjectMeta, annBindCompleted) {
		return pc.addBound(volume, key, pvc.Spec.VolumeName)
	}
	className := claimClass(pvc)
	if pvc.Spec.VolumeName != "" {
		// Pre-bound: the PersistentVolume controller binds it, not the scheduler.
		return bindingFailure("volume %s: PersistentVolumeClaim %s is not bound yet (it names PersistentVolume %s, and the binding is not complete)",
			volume, key, pvc.Spec.VolumeName)
	}
	if className == "" {
		return bindingFailure("volume %s: PersistentVolumeClaim %s is not bound yet and names no StorageClass", volume, key)
	}
	class := snap.StorageClass(className)
	switch {
	case class == nil:
		return bindingFailure("volume %s: PersistentVolumeClaim %s is not bound yet and its StorageClass %s is not found", volume, key, className)
	case class.VolumeBindingMode == nil:
		return bindingFailure("volume %s: StorageClass %s sets no volumeBindingMode", volume, className)
	case *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer:
		return bindingFailure("volume %s: PersistentVolumeClaim %s is not bound yet (StorageClass %s binds %s, not at the pod's placement)",
			volume, key, className, *class.VolumeBindingMode)
	}
	u := unboundClaim{
		what:  fmt.Sprintf("volume %s (claim %s, StorageClass %s, unbound)", volume, key, className),
		pvc:   pvc,
		class: class,
	}
	u.selectedNode, u.hasSelectedNode = pvc.Annotations[annSelectedNode]
	if pvc.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(pvc.Spec.Selector)
		if err != nil {
			return bindingFailure("volume %s: PersistentVolumeClaim %s: spec.selector: %v", volume, key, err)
		}
		u.selector = sel
	}
	for _, pv := range snap.PersistentVolumes() {
		if volumeClass(pv) == className {
			u.volumes = append(u.volumes, pv)
		}
	}
	u.topology = topologySelectors(class.AllowedTopologies)
	u.allowed = describeTopology(class.AllowedTopologies)
	pc.vol.binding.unbound = append(pc.vol.binding.unbound, u)
	return Result{}
}

func (pc *PodCheck) addBound(volume, key, pvName string) Result {
	pv := pc.checker.snap.PersistentVolume(pvName)
	if pv == nil {
		return bindingFailure("volume %s: PersistentVolume %s of claim %s not found", volume, pvName, key)
	}
	bv := boundVolume{what: fmt.Sprintf("volume %s (claim %s, PersistentVolume %s)", volume, key, pvName)}
	if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil {
		bv.selector = nodeaffinity.NewLazyErrorNodeSelector(na.Required)
		bv.needs = describeNodeSelector(na.Required)
	}
	pc.vol.binding.bound = append(pc.vol.binding.bound, bv)
	return Result{}
}

// checkBinding is VolumeBinding's Filter: every bound volume's node
// affinity admits the node, and every unbound claim finds a static volume
// there or can be provisioned there.
func (pc *PodCheck) checkBinding(ni *snapshot.NodeInfo) Result {
	b := &pc.vol.binding
	if len(b.bound) == 0 && len(b.unbound) == 0 {
		return Result{}
	}
	b.scratch.Labels = ni.Node.Labels
	for i := range b.bound {
		bv := &b.bound[i]
		if bv.selector == nil {
			continue
		}
		// A term that fails to parse matches nothing, as in the scheduler.
		if ok, _ := bv.selector.Match(&b.scratch); !ok {
			return Result{Predicate: VolumeBinding, Reason: ReasonVolumeNodeAffinity, Detail: bv.what, Detail2: bv.needs}
		}
	}
	if len(b.unbound) == 0 {
		return Result{}
	}
	return pc.checkUnbound(ni.Node)
}

func (pc *PodCheck) checkUnbound(node *v1.Node) Result {
	b := &pc.vol.binding
	for i := range b.unbound {
		u := &b.unbound[i]
		if u.hasSelectedNode && u.selectedNode != node.Name {
			return bindConflict(u, "it is being provisioned for node "+u.selectedNode)
		}
	}
	b.chosen = b.chosen[:0]
	b.provision = b.provision[:0]
	for i := range b.unbound {
		b.provision = append(b.provision, b.unbound[i].hasSelectedNode)
	}
	for _, i := range b.matchOrder {
		if pv := b.matchingVolume(&b.unbound[i]); pv != nil {
			b.chosen = append(b.chosen, pv)
		} else {
			b.provision[i] = true
		}
	}
	for i := range b.unbound {
		if !b.provision[i] {
			continue
		}
		if r := b.checkProvision(&b.unbound[i]); !r.Fits() {
			return r
		}
	}
	return Result{}
}

// sortMatchOrder orders the claims that look for a static volume by their
// storage request, keeping the pod's order among equal ones.
func (b *bindingState) sortMatchOrder() {
	b.matchOrder = b.matchOrder[:0]
	for i := range b.unbound {
		if !b.unbound[i].hasSelectedNode {
			b.matchOrder = append(b.matchOrder, i)
		}
	}
	slices.SortStableFunc(b.matchOrder, func(i, j int) int {
		qi := b.unbound[i].pvc.Spec.Resources.Requests[v1.ResourceStorage]
		qj := b.unbound[j].pvc.Spec.Resources.Requests[v1.ResourceStorage]
		return qi.Cmp(qj)
	})
}

func (b *bindingState) checkProvision(u *unboundClaim) Result {
	p := u.class.Provisioner
	if p == "" || p == noProvisioner {
		return bindConflict(u, fmt.Sprintf("no available PersistentVolume of StorageClass %s fits, and the class provisions none", u.class.Name))
	}
	if !matchTopology(u.topology, b.scratch.Labels) {
		return bindConflict(u, fmt.Sprintf("no available PersistentVolume fits, and StorageClass %s provisions only where %s", u.class.Name, u.allowed))
	}
	return Result{}
}

func bindConflict(u *unboundClaim, why string) Result {
	return Result{Predicate: VolumeBinding, Reason: ReasonVolumeBindConflict, Detail: u.what, Detail2: why}
}
