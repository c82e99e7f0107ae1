package predicates

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

type topologyPair struct{ key, value string }

// affinityState is what the required inter-pod (anti-)affinity check needs:
// per topology domain, how many existing pods satisfy the incoming pod's
// terms, and how many existing pods' anti-affinity terms exclude it.
type affinityState struct {
	affinityTerms     []snapshot.AffinityTerm
	antiAffinityTerms []snapshot.AffinityTerm
	affinityCounts    map[topologyPair]int
	antiCounts        map[topologyPair]int
	existingAnti      map[topologyPair]int
	// selfAffinity: the pod satisfies all its own affinity terms, which lets
	// the first pod of a self-affine group land anywhere.
	selfAffinity bool
}

func (s *affinityState) prepare(snap *snapshot.Snapshot, pi *snapshot.PodInfo) {
	pod := pi.Pod
	clear(s.affinityCounts)
	clear(s.antiCounts)
	clear(s.existingAnti)
	if snap.HasRequiredAntiAffinityPods() {
		s.countExistingAntiAffinity(snap, pod)
	}
	if len(pi.RequiredAffinityTerms) == 0 && len(pi.RequiredAntiAffinityTerms) == 0 {
		return
	}
	s.affinityTerms = withSelectedNamespaces(snap, pi.RequiredAffinityTerms)
	s.antiAffinityTerms = withSelectedNamespaces(snap, pi.RequiredAntiAffinityTerms)
	s.selfAffinity = matchesAll(s.affinityTerms, pod)
	if len(s.affinityTerms) > 0 {
		s.affinityCounts = ensureMap(s.affinityCounts)
		forEachCandidate(snap, &s.affinityTerms[0], func(existing *snapshot.PodInfo) {
			if !matchesAll(s.affinityTerms, existing.Pod) {
				return
			}
			node := snap.NodeOf(existing).Node
			for i := range s.affinityTerms {
				addPair(s.affinityCounts, node, s.affinityTerms[i].TopologyKey)
			}
		})
	}
	if len(s.antiAffinityTerms) > 0 {
		s.antiCounts = ensureMap(s.antiCounts)
		for i := range s.antiAffinityTerms {
			t := &s.antiAffinityTerms[i]
			forEachCandidate(snap, t, func(existing *snapshot.PodInfo) {
				if t.Matches(existing.Pod, nil) {
					addPair(s.antiCounts, snap.NodeOf(existing).Node, t.TopologyKey)
				}
			})
		}
	}
}

// countExistingAntiAffinity counts, per domain, the anti-affinity terms of
// pods already placed that the incoming pod falls under (the symmetry rule).
func (s *affinityState) countExistingAntiAffinity(snap *snapshot.Snapshot, pod *v1.Pod) {
	nsLabels := snap.NamespaceLabels(pod.Namespace)
	for _, ni := range snap.NodesWithRequiredAntiAffinity() {
		for _, existing := range ni.PodsWithRequiredAntiAffinity {
			for i := range existing.RequiredAntiAffinityTerms {
				t := &existing.RequiredAntiAffinityTerms[i]
				if t.Matches(pod, nsLabels) {
					s.existingAnti = ensureMap(s.existingAnti)
					addPair(s.existingAnti, ni.Node, t.TopologyKey)
				}
			}
		}
	}
}

func (s *affinityState) check(pod *v1.Pod, node *v1.Node) Result {
	if len(s.affinityTerms) > 0 {
		satisfied := true
		for i := range s.affinityTerms {
			key := s.affinityTerms[i].TopologyKey
			v, ok := node.Labels[key]
			if !ok {
				return Result{Predicate: InterPodAffinity, Reason: ReasonAffinity, Detail: key}
			}
			if s.affinityCounts[topologyPair{key, v}] <= 0 {
				satisfied = false
			}
		}
		// With no matching pod anywhere, a pod that matches its own terms
		// may start the group.
		if !satisfied && !(len(s.affinityCounts) == 0 && s.selfAffinity) {
			return Result{Predicate: InterPodAffinity, Reason: ReasonAffinity, Detail: s.affinityTerms[0].TopologyKey}
		}
	}
	if len(s.antiCounts) > 0 {
		for i := range s.antiAffinityTerms {
			key := s.antiAffinityTerms[i].TopologyKey
			if v, ok := node.Labels[key]; ok && s.antiCounts[topologyPair{key, v}] > 0 {
				return Result{Predicate: InterPodAffinity, Reason: ReasonAntiAffinity, Detail: key}
			}
		}
	}
	if len(s.existingAnti) > 0 {
		for k, v := range node.Labels {
			if s.existingAnti[topologyPair{k, v}] > 0 {
				return Result{Predicate: InterPodAffinity, Reason: ReasonExistingAntiAffinity, Detail: k}
			}
		}
	}
	return Result{}
}

// withSelectedNamespaces copies terms, adding to each the namespaces its
// namespace selector picks among the snapshot's namespaces. The selector is
// kept: as in kube-scheduler, it is also tried against empty labels when
// matching existing pods, so a selector that matches empty labels admits
// every namespace.
func withSelectedNamespaces(snap *snapshot.Snapshot, terms []snapshot.AffinityTerm) []snapshot.AffinityTerm {
	if len(terms) == 0 {
		return nil
	}
	out := make([]snapshot.AffinityTerm, len(terms))
	copy(out, terms)
	for i := range out {
		t := &out[i]
		if t.NamespaceSelector.Empty() {
			continue
		}
		ns := make(map[string]struct{}, len(t.Namespaces)+2)
		for n := range t.Namespaces {
			ns[n] = struct{}{}
		}
		for _, n := range snap.Namespaces() {
			if t.NamespaceSelector.Matches(labels.Set(n.Labels)) {
				ns[n.Name] = struct{}{}
			}
		}
		t.Namespaces = ns
	}
	return out
}

func matchesAll(terms []snapshot.AffinityTerm, pod *v1.Pod) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].Matches(pod, nil) {
			return false
		}
	}
	return true
}

// forEachCandidate calls fn for every pod that could match t.
func forEachCandidate(snap *snapshot.Snapshot, t *snapshot.AffinityTerm, fn func(*snapshot.PodInfo)) {
	forEachSelected(snap, t.Selector, fn)
}

// forEachSelected calls fn, in no set order, for every pod sel could match:
// through the label index, the pods carrying one of the values of an
// equality requirement of sel when it has one, otherwise every pod. fn must
// still test sel itself.
func forEachSelected(snap *snapshot.Snapshot, sel labels.Selector, fn func(*snapshot.PodInfo)) {
	if reqs, ok := sel.Requirements(); ok {
		for _, r := range reqs {
			switch r.Operator() {
			case selection.In, selection.Equals, selection.DoubleEquals:
				for _, v := range r.ValuesUnsorted() {
					snap.ForEachPodWithLabel(r.Key(), v, fn)
				}
				return
			}
		}
	}
	for _, ni := range snap.Nodes() {
		for _, pi := range ni.Pods {
			fn(pi)
		}
	}
}

func addPair(m map[topologyPair]int, node *v1.Node, key string) {
	if v, ok := node.Labels[key]; ok {
		m[topologyPair{key, v}]++
	}
}

func ensureMap(m map[topologyPair]int) map[topologyPair]int {
	if m == nil {
		return make(map[topologyPair]int)
	}
	return m
}
