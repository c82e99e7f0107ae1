package predicates

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"
)

// matchingVolume is the static volume an unbound claim would be bound to on
// the node in b.scratch, or nil: the rules of FindMatchingVolume in
// k8s.io/component-helpers/storage/volume on the scheduler's path, with
// VolumeAttributesClass on (GA in 1.34). A volume pre-bound to the claim
// wins if its node affinity admits the node; otherwise the smallest
// available volume that matches.
func (b *bindingState) matchingVolume(u *unboundClaim) *v1.PersistentVolume {
	claim := u.pvc
	requested := claim.Spec.Resources.Requests[v1.ResourceStorage]
	claimVAC := ptr.Deref(claim.Spec.VolumeAttributesClassName, "")
	var smallest *v1.PersistentVolume
	for _, pv := range u.volumes {
		if b.isChosen(pv) {
			continue
		}
		preBound := pv.Spec.ClaimRef != nil
		if preBound && !boundToClaim(pv, claim) {
			continue
		}
		size := pv.Spec.Capacity[v1.ResourceStorage]
		if size.Cmp(requested) < 0 || volumeModeOf(claim.Spec.VolumeMode) != volumeModeOf(pv.Spec.VolumeMode) ||
			claimVAC != ptr.Deref(pv.Spec.VolumeAttributesClassName, "") || pv.DeletionTimestamp != nil {
			continue
		}
		affinityOK := b.volumeAdmitsNode(pv)
		if preBound {
			if !affinityOK {
				return nil
			}
			return pv
		}
		if pv.Status.Phase != v1.VolumeAvailable || (u.selector != nil && !u.selector.Matches(labels.Set(pv.Labels))) ||
			!affinityOK || !hasAccessModes(pv, claim) {
			continue
		}
		if smallest == nil {
			smallest = pv
			continue
		}
		if s := smallest.Spec.Capacity[v1.ResourceStorage]; s.Cmp(size) > 0 {
			smallest = pv
		}
	}
	return smallest
}

func (b *bindingState) isChosen(pv *v1.PersistentVolume) bool {
	for _, c := range b.chosen {
		if c.Name == pv.Name {
			return true
		}
	}
	return false
}

func (b *bindingState) volumeAdmitsNode(pv *v1.PersistentVolume) bool {
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil {
		return true
	}
	ok, _ := nodeaffinity.NewLazyErrorNodeSelector(na.Required).Match(&b.scratch)
	return ok
}

// boundToClaim: the volume's claimRef names the claim (and its UID, when
// the reference carries one).
func boundToClaim(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) bool {
	ref := pv.Spec.ClaimRef
	return ref != nil && ref.Name == claim.Name && ref.Namespace == claim.Namespace && (ref.UID == "" || ref.UID == claim.UID)
}

func volumeModeOf(m *v1.PersistentVolumeMode) v1.PersistentVolumeMode {
	if m == nil {
		return v1.PersistentVolumeFilesystem
	}
	return *m
}

func hasAccessModes(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) bool {
	for _, want := range claim.Spec.AccessModes {
		found := false
		for _, have := range pv.Spec.AccessModes {
			if have == want {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// volumeClass is the volume's storage class, the beta annotation first.
func volumeClass(pv *v1.PersistentVolume) string {
	if class, ok := pv.Annotations[v1.BetaStorageClassAnnotation]; ok {
		return class
	}
	return pv.Spec.StorageClassName
}

// topologySelectors parses a class's allowed topologies. A term without
// expressions, or one that does not parse, selects nothing (nil).
func topologySelectors(terms []v1.TopologySelectorTerm) []labels.Selector {
	if len(terms) == 0 {
		return nil
	}
	out := make([]labels.Selector, len(terms))
	for i, term := range terms {
		if len(term.MatchLabelExpressions) == 0 {
			continue
		}
		sel := labels.NewSelector()
		ok := true
		for _, expr := range term.MatchLabelExpressions {
			if len(expr.Values) == 0 {
				ok = false
				break
			}
			req, err := labels.NewRequirement(expr.Key, selection.In, expr.Values)
			if err != nil {
				ok = false
				break
			}
			sel = sel.Add(*req)
		}
		if ok {
			out[i] = sel
		}
	}
	return out
}

// matchTopology: no terms allow every node; otherwise one term must match.
func matchTopology(terms []labels.Selector, nodeLabels map[string]string) bool {
	if len(terms) == 0 {
		return true
	}
	for _, sel := range terms {
		if sel != nil && sel.Matches(labels.Set(nodeLabels)) {
			return true
		}
	}
	return false
}

// describeNodeSelector writes a volume's node affinity for people:
// "topology.kubernetes.io/zone in [a]", terms joined by "or".
func describeNodeSelector(ns *v1.NodeSelector) string {
	terms := make([]string, 0, len(ns.NodeSelectorTerms))
	for _, t := range ns.NodeSelectorTerms {
		var parts []string
		for _, e := range t.MatchExpressions {
			parts = append(parts, describeRequirement(e))
		}
		for _, e := range t.MatchFields {
			parts = append(parts, describeRequirement(e))
		}
		if len(parts) == 0 {
			parts = append(parts, "an empty term (matches no node)")
		}
		terms = append(terms, strings.Join(parts, " and "))
	}
	if len(terms) == 0 {
		return "no node (no terms)"
	}
	return strings.Join(terms, " or ")
}

func describeRequirement(e v1.NodeSelectorRequirement) string {
	switch e.Operator {
	case v1.NodeSelectorOpIn:
		return fmt.Sprintf("%s in %v", e.Key, e.Values)
	case v1.NodeSelectorOpNotIn:
		return fmt.Sprintf("%s not in %v", e.Key, e.Values)
	case v1.NodeSelectorOpExists:
		return e.Key + " set"
	case v1.NodeSelectorOpDoesNotExist:
		return e.Key + " not set"
	case v1.NodeSelectorOpGt:
		return fmt.Sprintf("%s > %v", e.Key, e.Values)
	case v1.NodeSelectorOpLt:
		return fmt.Sprintf("%s < %v", e.Key, e.Values)
	}
	return fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values)
}

// describeTopology writes a class's allowed topologies like
// describeNodeSelector.
func describeTopology(terms []v1.TopologySelectorTerm) string {
	out := make([]string, 0, len(terms))
	for _, t := range terms {
		var parts []string
		for _, e := range t.MatchLabelExpressions {
			parts = append(parts, fmt.Sprintf("%s in %v", e.Key, e.Values))
		}
		if len(parts) == 0 {
			parts = append(parts, "an empty term (matches no node)")
		}
		out = append(out, strings.Join(parts, " and "))
	}
	return strings.Join(out, " or ")
}
