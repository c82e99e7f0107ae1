package snapshot

import (
	"sort"
)

// PodsInNamespace returns the pods of one namespace sorted by name.
func (s *Snapshot) PodsInNamespace(namespace string) []*PodInfo {
	set := map[*PodInfo]struct{}{}
	for k, pi := range s.pods {
		if k.namespace == namespace {
			set[pi] = struct{}{}
		}
	}
	return sortedPods(set)
}

// PodsWithLabel returns the pods labelled key=value sorted by namespace/name.
func (s *Snapshot) PodsWithLabel(key, value string) []*PodInfo {
	return sortedPods(s.labelIndex()[labelPair{key, value}])
}

// ForEachPodWithLabel calls fn for every pod labelled key=value, in no
// particular order, without allocating. Use it where order cannot matter.
func (s *Snapshot) ForEachPodWithLabel(key, value string, fn func(*PodInfo)) {
	for pi := range s.labelIndex()[labelPair{key, value}] {
		fn(pi)
	}
}

// labelIndex builds the label index on first use; binding and unbinding
// keep it from then on.
func (s *Snapshot) labelIndex() map[labelPair]map[*PodInfo]struct{} {
	if s.byLabel == nil {
		s.byLabel = map[labelPair]map[*PodInfo]struct{}{}
		for pi := range s.podNode {
			for k, v := range pi.Pod.Labels {
				addToSet(s.byLabel, labelPair{k, v}, pi)
			}
		}
	}
	return s.byLabel
}

// DomainValues returns the values the label key takes across nodes, sorted:
// the topology domains of that key.
func (s *Snapshot) DomainValues(key string) []string {
	values := s.domains[key]
	out := make([]string, 0, len(values))
	for v := range values {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// NodesInDomain returns the nodes labelled key=value sorted by name.
func (s *Snapshot) NodesInDomain(key, value string) []*NodeInfo {
	set := s.domains[key][value]
	out := make([]*NodeInfo, 0, len(set))
	for ni := range set {
		out = append(out, ni)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// ForEachDomain calls fn with each value the label key takes across nodes
// and how many nodes carry it, in no particular order, until fn returns
// false: for answers that do not depend on the order.
func (s *Snapshot) ForEachDomain(key string, fn func(value string, nodes int) bool) {
	for v, set := range s.domains[key] {
		if !fn(v, len(set)) {
			return
		}
	}
}

// ForEachNodeInDomain calls fn with each node labelled key=value, in no
// particular order, until fn returns false: for answers that do not
// depend on the order (is any node of the domain eligible?).
func (s *Snapshot) ForEachNodeInDomain(key, value string, fn func(*NodeInfo) bool) {
	for ni := range s.domains[key][value] {
		if !fn(ni) {
			return
		}
	}
}

// DomainSize is how many nodes are labelled key=value.
func (s *Snapshot) DomainSize(key, value string) int { return len(s.domains[key][value]) }

// NodesWithRequiredAntiAffinity returns the nodes that hold at least one pod
// with required pod anti-affinity, sorted by name.
func (s *Snapshot) NodesWithRequiredAntiAffinity() []*NodeInfo {
	out := make([]*NodeInfo, 0, len(s.antiNodes))
	for ni := range s.antiNodes {
		out = append(out, ni)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// HasRequiredAntiAffinityPods reports whether any pod in the snapshot has
// required pod anti-affinity.
func (s *Snapshot) HasRequiredAntiAffinityPods() bool { return len(s.antiNodes) > 0 }

func sortedPods(set map[*PodInfo]struct{}) []*PodInfo {
	out := make([]*PodInfo, 0, len(set))
	for pi := range set {
		out = append(out, pi)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Pod, out[j].Pod
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}
