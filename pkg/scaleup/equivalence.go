package scaleup

import (
	"bytes"
	"hash/fnv"
	"maps"
	"reflect"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Class is a set of pending pods that are interchangeable for scheduling:
// same namespace, labels, requests and scheduling constraints, and resource
// claims of the same specs that are each pod's own. The planner simulates
// one representative per class and counts, so 50,000 replicas cost about
// as much as one. Pods of different owners with the same spec share a
// class too: the scheduler cannot tell them apart either.
type Class struct {
	// Pods are the members in input order; Pods[0] is the representative.
	Pods []*snapshot.PodInfo
	// claims are the names of the members' resource claims: no claim may
	// belong to two members, or placing one would allocate it for both.
	// repClaims are the representative's, resolved once.
	claims    map[string]struct{}
	repClaims []snapshot.PodClaim
	// repSpecs are the representative's claim specs, serialized: equal
	// bytes, equal specs (a compare that allocates nothing per member).
	repSpecs [][]byte
	// alone: the representative admits no member (its ephemeral volumes'
	// claims are bound or placed already, so its fit is its own).
	alone bool
}

// Rep is the representative pod.
func (c *Class) Rep() *snapshot.PodInfo { return c.Pods[0] }

// groupClasses sorts pods into classes, keeping first-seen order. Members
// share the representative's computed requests, ports and terms, which are
// equal by construction. s resolves resource claims.
func groupClasses(s *snapshot.Snapshot, pods []*v1.Pod) ([]*Class, error) {
	buckets := make(map[uint64][]*Class, 16)
	var classes []*Class
	for _, pod := range pods {
		sig := signature(pod)
		var found *Class
		var claims []snapshot.PodClaim
		if len(pod.Spec.ResourceClaims) > 0 {
			claims = ownClaims(s, pod)
		}
		alone := !ephemeralClaimsFresh(s, pod)
		for _, c := range buckets[sig] {
			if alone {
				break
			}
			if !c.alone && equivalent(c.Rep().Pod, pod) && (len(pod.Spec.ResourceClaims) == 0 || c.admitsClaims(s, claims)) {
				found = c
				break
			}
		}
		if found != nil {
			pi := *found.Rep()
			pi.Pod = pod
			found.Pods = append(found.Pods, &pi)
			found.addClaims(claims)
			continue
		}
		pi, err := snapshot.NewPodInfo(pod)
		if err != nil {
			return nil, err
		}
		c := &Class{Pods: []*snapshot.PodInfo{pi}, repClaims: claims, alone: alone}
		c.addClaims(claims)
		buckets[sig] = append(buckets[sig], c)
		classes = append(classes, c)
	}
	return classes, nil
}

// ownClaims resolves a pod's claims if every one is the pod's own and
// unallocated: made or to be made from a template for it, or a claim by
// name that no one holds. Otherwise (a claim allocated or reserved
// already, shared, or missing) it returns nil and the pod keeps a class of
// its own, where its claims are judged as they are.
func ownClaims(s *snapshot.Snapshot, pod *v1.Pod) []snapshot.PodClaim {
	claims, err := s.PodClaims(pod)
	if err != nil || len(claims) != len(pod.Spec.ResourceClaims) {
		return nil
	}
	for i := range claims {
		if c := claims[i].Claim; c != nil && (c.Status.Allocation != nil || len(c.Status.ReservedFor) > 0 || c.DeletionTimestamp != nil) {
			return nil
		}
	}
	return claims
}

// admitsClaims: the pod's own claims have the specs of the class's
// representative's, and none is a claim a member has already.
func (c *Class) admitsClaims(s *snapshot.Snapshot, claims []snapshot.PodClaim) bool {
	if claims == nil || c.claims == nil {
		return false
	}
	rep := c.repClaims
	if len(rep) != len(claims) {
		return false
	}
	if c.repSpecs == nil {
		c.repSpecs = make([][]byte, len(rep))
		for i := range rep {
			c.repSpecs[i] = specBytes(rep[i].Spec())
		}
	}
	for i := range claims {
		a, b := claims[i].Spec(), rep[i].Spec()
		if _, taken := c.claims[claims[i].Name]; taken || claims[i].Generated != rep[i].Generated {
			return false
		}
		if a != b && (c.repSpecs[i] == nil || !bytes.Equal(specBytes(a), c.repSpecs[i])) {
			return false
		}
	}
	return true
}

// specBytes is the claim spec's protobuf encoding (map keys sorted, so
// equal specs encode alike), nil if it cannot be encoded.
func specBytes(spec *resourceapi.ResourceClaimSpec) []byte {
	b, err := spec.Marshal()
	if err != nil {
		return nil
	}
	return b
}

func (c *Class) addClaims(claims []snapshot.PodClaim) {
	if claims == nil {
		return
	}
	if c.claims == nil {
		c.claims = make(map[string]struct{}, len(claims))
	}
	for i := range claims {
		c.claims[claims[i].Name] = struct{}{}
	}
}

// signature hashes the cheap-to-read parts of what makes pods equivalent.
// Map entries are combined order-independently; collisions are resolved by
// equivalent.
func signature(p *v1.Pod) uint64 {
	h := fnv.New64a()
	write := func(s string) { _, _ = h.Write([]byte(s)); _, _ = h.Write([]byte{0}) }
	write(p.Namespace)
	write(p.Spec.NodeName)
	sum := h.Sum64()
	sum ^= mapHash(p.Labels, 1) ^ mapHash(p.Spec.NodeSelector, 2)
	for i := range p.Spec.Containers {
		sum ^= resourceHash(p.Spec.Containers[i].Resources.Requests, uint64(i)+3)
	}
	for i := range p.Spec.InitContainers {
		sum ^= resourceHash(p.Spec.InitContainers[i].Resources.Requests, uint64(i)+101)
	}
	for i, rc := range p.Spec.ResourceClaims {
		h := fnv.New64a()
		if rc.ResourceClaimTemplateName != nil {
			_, _ = h.Write([]byte(*rc.ResourceClaimTemplateName))
		}
		sum ^= h.Sum64() * (uint64(i)*2 + 1001)
	}
	return sum
}

func mapHash(m map[string]string, salt uint64) uint64 {
	var sum uint64
	for k, v := range m {
		h := fnv.New64a()
		_, _ = h.Write([]byte(k))
		_, _ = h.Write([]byte{'='})
		_, _ = h.Write([]byte(v))
		sum += h.Sum64() * (salt*2 + 1)
	}
	return sum
}

func resourceHash(rl v1.ResourceList, salt uint64) uint64 {
	var sum uint64
	for name, q := range rl {
		h := fnv.New64a()
		_, _ = h.Write([]byte(name))
		sum += (h.Sum64() ^ uint64(q.MilliValue())) * (salt*2 + 1)
	}
	return sum
}

// equivalent compares everything the scheduling checks read.
func equivalent(a, b *v1.Pod) bool {
	if a.Namespace != b.Namespace || a.Spec.NodeName != b.Spec.NodeName ||
		!maps.Equal(a.Labels, b.Labels) || !maps.Equal(a.Spec.NodeSelector, b.Spec.NodeSelector) ||
		priority(a) != priority(b) {
		return false
	}
	if !sameContainers(a.Spec.Containers, b.Spec.Containers) || !sameContainers(a.Spec.InitContainers, b.Spec.InitContainers) {
		return false
	}
	return reflect.DeepEqual(a.Spec.Affinity, b.Spec.Affinity) &&
		reflect.DeepEqual(a.Spec.Tolerations, b.Spec.Tolerations) &&
		reflect.DeepEqual(a.Spec.TopologySpreadConstraints, b.Spec.TopologySpreadConstraints) &&
		sameQuantities(a.Spec.Overhead, b.Spec.Overhead) &&
		reflect.DeepEqual(a.Spec.Resources, b.Spec.Resources) &&
		sameClaims(a.Spec.Volumes, b.Spec.Volumes) &&
		sameClaimEntries(a.Spec.ResourceClaims, b.Spec.ResourceClaims)
}

// sameClaimEntries: resource claim entries of the same kinds in the same
// order (a claim by name, or one from the same template). Entry names only
// tie claims to containers, which scheduling does not look at; the claims
// themselves are compared by admitsClaims.
func sameClaimEntries(a, b []v1.PodResourceClaim) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if (a[i].ResourceClaimName == nil) != (b[i].ResourceClaimName == nil) ||
			!ptrEqual(a[i].ResourceClaimTemplateName, b[i].ResourceClaimTemplateName) {
			return false
		}
	}
	return true
}

func ptrEqual(a, b *string) bool { return a == b || (a != nil && b != nil && *a == *b) }

func sameContainers(a, b []v1.Container) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameQuantities(a[i].Resources.Requests, b[i].Resources.Requests) ||
			!sameQuantities(a[i].Resources.Limits, b[i].Resources.Limits) ||
			!slices.Equal(a[i].Ports, b[i].Ports) ||
			!reflect.DeepEqual(a[i].RestartPolicy, b[i].RestartPolicy) {
			return false
		}
	}
	return true
}

// sameQuantities compares resource lists by value ("1" equals "1000m"),
// without reflection: it runs once per pending pod.
func sameQuantities(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		r, ok := b[name]
		if !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}

// sameClaims: the same PersistentVolumeClaims by name, and generic
// ephemeral volumes of the same names and claim templates (each pod's
// claim is its own, so only the templates can be compared; pods whose
// ephemeral claims are bound already never share a class).
func sameClaims(a, b []v1.Volume) bool {
	claims := func(vs []v1.Volume) []string {
		var out []string
		for _, v := range vs {
			if v.PersistentVolumeClaim != nil {
				out = append(out, v.PersistentVolumeClaim.ClaimName)
			}
		}
		return out
	}
	if !slices.Equal(claims(a), claims(b)) {
		return false
	}
	var ea, eb []*v1.Volume
	for i := range a {
		if a[i].Ephemeral != nil {
			ea = append(ea, &a[i])
		}
	}
	for i := range b {
		if b[i].Ephemeral != nil {
			eb = append(eb, &b[i])
		}
	}
	if len(ea) != len(eb) {
		return false
	}
	for i := range ea {
		if ea[i].Name != eb[i].Name || !reflect.DeepEqual(ea[i].Ephemeral, eb[i].Ephemeral) {
			return false
		}
	}
	return true
}

// ephemeralClaimsFresh: every generic ephemeral volume's claim is still as
// its template makes it (not made yet, or made for the pod and neither
// bound nor given a node). A claim past that ties the pod to its own
// volume's topology.
func ephemeralClaimsFresh(s *snapshot.Snapshot, pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Ephemeral == nil {
			continue
		}
		pvc := s.PersistentVolumeClaim(pod.Namespace, ephemeral.VolumeClaimName(pod, v))
		if pvc == nil {
			continue
		}
		_, selected := pvc.Annotations["volume.kubernetes.io/selected-node"]
		if pvc.Spec.VolumeName != "" || selected || pvc.DeletionTimestamp != nil || ephemeral.VolumeIsForPod(pod, pvc) != nil {
			return false
		}
	}
	return true
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}
