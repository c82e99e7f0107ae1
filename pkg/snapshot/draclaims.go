package snapshot

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodClaim is one entry of a pod's spec.resourceClaims resolved against the
// snapshot.
type PodClaim struct {
	// Index is the entry's position in pod.spec.resourceClaims.
	Index int
	// Name is the ResourceClaim's name.
	Name string
	// Claim is the claim, nil while it is still to be made from Template.
	Claim *resourceapi.ResourceClaim
	// Template is set for a claim made from a ResourceClaimTemplate for
	// this pod alone: its own private claim.
	Template *resourceapi.ResourceClaimTemplate
	// Generated marks a claim generated (or to be generated) from a
	// template for this pod alone.
	Generated bool
}

// Spec is the claim's spec: the claim's own, or the template's for a claim
// still to be made.
func (pc *PodClaim) Spec() *resourceapi.ResourceClaimSpec {
	if pc.Claim != nil {
		return &pc.Claim.Spec
	}
	return &pc.Template.Spec.Spec
}

// SimulatedClaimName names the claim the snapshot makes from a template
// for a pod placed in a simulation before the resource claim controller
// made one. The "/" cannot occur in a real claim's name.
func SimulatedClaimName(podName, podClaimName string) string { return podName + "/" + podClaimName }

// IsSimulatedClaim reports whether a claim was made by the snapshot.
func IsSimulatedClaim(c *resourceapi.ResourceClaim) bool { return strings.Contains(c.Name, "/") }

// PodClaims resolves the pod's resource claims as kube-scheduler does
// (resourceclaim.Name), with one addition for autoscaling: a claim to be
// made from a template for a pod that has none yet is resolved to the
// template, not refused, since the resource claim controller makes one as
// soon as the pod exists. Entries the controller decided need no claim are
// left out. The error says which claim or template is missing.
func (s *Snapshot) PodClaims(pod *v1.Pod) ([]PodClaim, error) {
	if len(pod.Spec.ResourceClaims) == 0 {
		return nil, nil
	}
	out := make([]PodClaim, 0, len(pod.Spec.ResourceClaims))
	for i := range pod.Spec.ResourceClaims {
		pc, skip, err := s.resolveClaim(pod, i)
		if err != nil {
			return nil, err
		}
		if !skip {
			out = append(out, pc)
		}
	}
	return out, nil
}

func (s *Snapshot) resolveClaim(pod *v1.Pod, i int) (PodClaim, bool, error) {
	rc := &pod.Spec.ResourceClaims[i]
	switch {
	case rc.ResourceClaimName != nil:
		c := s.dra.claims[claimKey{pod.Namespace, *rc.ResourceClaimName}]
		if c == nil {
			return PodClaim{}, false, fmt.Errorf("resourceclaim %s/%s not found", pod.Namespace, *rc.ResourceClaimName)
		}
		return PodClaim{Index: i, Name: c.Name, Claim: c}, false, nil
	case rc.ResourceClaimTemplateName != nil:
		for _, st := range pod.Status.ResourceClaimStatuses {
			if st.Name != rc.Name {
				continue
			}
			if st.ResourceClaimName == nil {
				return PodClaim{}, true, nil // the controller decided no claim is needed
			}
			c := s.dra.claims[claimKey{pod.Namespace, *st.ResourceClaimName}]
			if c == nil {
				return PodClaim{}, false, fmt.Errorf("resourceclaim %s/%s not found", pod.Namespace, *st.ResourceClaimName)
			}
			return PodClaim{Index: i, Name: c.Name, Claim: c, Generated: true}, false, nil
		}
		name := SimulatedClaimName(pod.Name, rc.Name)
		if c := s.dra.claims[claimKey{pod.Namespace, name}]; c != nil {
			return PodClaim{Index: i, Name: name, Claim: c, Generated: true}, false, nil
		}
		t := s.dra.templates[claimKey{pod.Namespace, *rc.ResourceClaimTemplateName}]
		if t == nil {
			return PodClaim{}, false, fmt.Errorf("resourceclaimtemplate %s/%s not found", pod.Namespace, *rc.ResourceClaimTemplateName)
		}
		return PodClaim{Index: i, Name: name, Template: t, Generated: true}, false, nil
	}
	return PodClaim{}, false, fmt.Errorf("spec.resourceClaims[%d] (%s): sets neither resourceClaimName nor resourceClaimTemplateName", i, rc.Name)
}

// AddPodInfoWithClaims binds a pod as AddPodInfo does and allocates its
// claims: allocations[i] is the allocation found for
// pod.spec.resourceClaims[i] (nil where the claim is allocated already or
// needs no allocation). Claims still to be made from a template are made,
// under SimulatedClaimName. Every claim of the pod is reserved for it.
func (s *Snapshot) AddPodInfoWithClaims(pi *PodInfo, nodeName string, allocations []*resourceapi.AllocationResult) error {
	ni, ok := s.nodes[nodeName]
	if !ok {
		return fmt.Errorf("pod %s: node %q is not in the snapshot", PodKey(pi.Pod), nodeName)
	}
	if _, dup := s.pods[keyOf(pi.Pod)]; dup {
		return fmt.Errorf("pod %s: already in the snapshot", PodKey(pi.Pod))
	}
	if len(allocations) > 0 && len(allocations) != len(pi.Pod.Spec.ResourceClaims) {
		return fmt.Errorf("pod %s: %d allocations for %d resource claims", PodKey(pi.Pod), len(allocations), len(pi.Pod.Spec.ResourceClaims))
	}
	s.bindPod(pi, ni, -1, -1)
	s.reserveClaims(pi.Pod, allocations)
	return nil
}

// reserveClaims reserves the pod's claims for it, allocating those given an
// allocation. A pod whose claims cannot be resolved binds without them.
func (s *Snapshot) reserveClaims(pod *v1.Pod, allocations []*resourceapi.AllocationResult) {
	claims, err := s.PodClaims(pod)
	if err != nil {
		return
	}
	for i := range claims {
		pc := &claims[i]
		var alloc *resourceapi.AllocationResult
		if pc.Index < len(allocations) {
			alloc = allocations[pc.Index]
		}
		if pc.Claim == nil {
			if alloc == nil {
				continue // nothing to hold yet
			}
			s.putClaim(claimKey{pod.Namespace, pc.Name}, simulatedClaim(pod, pc, alloc))
			continue
		}
		reserved := reservedFor(pc.Claim, pod)
		if reserved && (alloc == nil || pc.Claim.Status.Allocation != nil) {
			continue
		}
		c := *pc.Claim
		if alloc != nil && c.Status.Allocation == nil {
			c.Status.Allocation = alloc
		}
		if !reserved {
			c.Status.ReservedFor = append(c.Status.ReservedFor[:len(c.Status.ReservedFor):len(c.Status.ReservedFor)], consumer(pod))
		}
		s.putClaim(claimKey{c.Namespace, c.Name}, &c)
	}
}

// releaseClaims drops the pod's reservations. A claim nobody holds any more
// is deallocated, as the resource claim controller does; a claim the
// snapshot made is removed with the pod.
func (s *Snapshot) releaseClaims(pod *v1.Pod) {
	claims, err := s.PodClaims(pod)
	if err != nil {
		return
	}
	for i := range claims {
		old := claims[i].Claim
		if old == nil || !reservedFor(old, pod) {
			continue
		}
		k := claimKey{old.Namespace, old.Name}
		if IsSimulatedClaim(old) {
			s.putClaim(k, nil)
			continue
		}
		c := *old
		c.Status.ReservedFor = make([]resourceapi.ResourceClaimConsumerReference, 0, len(old.Status.ReservedFor))
		for _, r := range old.Status.ReservedFor {
			if !isPod(r, pod) {
				c.Status.ReservedFor = append(c.Status.ReservedFor, r)
			}
		}
		if len(c.Status.ReservedFor) == 0 {
			c.Status.ReservedFor = nil
			c.Status.Allocation = nil
		}
		s.putClaim(k, &c)
	}
}

func simulatedClaim(pod *v1.Pod, pc *PodClaim, alloc *resourceapi.AllocationResult) *resourceapi.ResourceClaim {
	yes := true
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: pc.Name, Namespace: pod.Namespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: &yes}},
		},
		Spec: pc.Template.Spec.Spec,
		Status: resourceapi.ResourceClaimStatus{
			Allocation:  alloc,
			ReservedFor: []resourceapi.ResourceClaimConsumerReference{consumer(pod)},
		},
	}
}

func consumer(pod *v1.Pod) resourceapi.ResourceClaimConsumerReference {
	return resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: pod.UID}
}

// isPod matches a reservation to a pod by UID, or by name where either
// side has no UID (objects built by hand).
func isPod(r resourceapi.ResourceClaimConsumerReference, pod *v1.Pod) bool {
	if r.Resource != "pods" || r.APIGroup != "" {
		return false
	}
	if r.UID != "" && pod.UID != "" {
		return r.UID == pod.UID
	}
	return r.Name == pod.Name
}

func reservedFor(c *resourceapi.ResourceClaim, pod *v1.Pod) bool {
	for _, r := range c.Status.ReservedFor {
		if isPod(r, pod) {
			return true
		}
	}
	return false
}

// ReservedOnlyFor reports whether the claim is reserved for pod and no one
// else.
func ReservedOnlyFor(c *resourceapi.ResourceClaim, pod *v1.Pod) bool {
	return len(c.Status.ReservedFor) == 1 && isPod(c.Status.ReservedFor[0], pod)
}
