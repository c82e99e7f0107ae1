package predicates

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// spreadConstraint is a parsed DoNotSchedule topology spread constraint.
type spreadConstraint struct {
	maxSkew      int
	key          string
	selector     labels.Selector
	minDomains   int
	honorAffinty bool
	honorTaints  bool
	selfMatch    int
	// counts maps each eligible domain value to its matching pods; min is
	// the global minimum used for skew.
	counts map[string]int
	min    int
	// domains are the domain values of the eligible nodes, which depend on
	// the nodes alone: kept while the snapshot's nodes stay the same
	// (domainsAt is its NodesGeneration), so that placing pods one by one
	// does not weigh every node again.
	domains    []string
	domainsAt  uint64
	hasDomains bool
}

type spreadState struct {
	constraints []spreadConstraint
}

// prepare parses the pod's hard constraints (once) and counts matching pods
// per domain over the nodes that the constraint's inclusion policies admit.
func (s *spreadState) prepare(snap *snapshot.Snapshot, pod *v1.Pod, na nodeaffinity.RequiredNodeAffinity) {
	if s.constraints == nil {
		s.constraints = parseSpread(pod)
	}
	if len(s.constraints) == 0 {
		return
	}
	for i := range s.constraints {
		c := &s.constraints[i]
		c.counts = make(map[string]int)
		// Every eligible node makes its domain count, even with no pods.
		for _, d := range s.eligibleDomains(c, snap, pod, na) {
			c.counts[d] = 0
		}
		if c.selector.Empty() {
			continue // an empty selector counts no pods
		}
		forEachSelected(snap, c.selector, func(pi *snapshot.PodInfo) {
			p := pi.Pod
			if p.DeletionTimestamp != nil || p.Namespace != pod.Namespace || !c.selector.Matches(labels.Set(p.Labels)) {
				return
			}
			if node := snap.NodeOf(pi).Node; s.eligible(c, node, pod, na) {
				c.counts[node.Labels[c.key]]++
			}
		})
	}
	for i := range s.constraints {
		c := &s.constraints[i]
		c.min = 0
		if len(c.counts) >= c.minDomains {
			first := true
			for _, n := range c.counts {
				if first || n < c.min {
					c.min, first = n, false
				}
			}
		}
	}
}

// eligibleDomains lists the domain values of the nodes eligible for c,
// weighing the nodes only when they changed since the last call. Only
// nodes carrying c.key can be eligible, so the snapshot's label index
// gives the candidates: domain by domain, stopping at the first eligible
// node; or, when the pod's node selector is honoured and its rarest label
// is on fewer nodes than a domain holds on average, only those nodes (none
// at all when no node carries it: the pod needs new nodes).
func (s *spreadState) eligibleDomains(c *spreadConstraint, snap *snapshot.Snapshot, pod *v1.Pod, na nodeaffinity.RequiredNodeAffinity) []string {
	if c.hasDomains && c.domainsAt == snap.NodesGeneration() {
		return c.domains
	}
	c.domains = c.domains[:0]
	c.domainsAt, c.hasDomains = snap.NodesGeneration(), true
	domains, keyed := 0, 0
	snap.ForEachDomain(c.key, func(_ string, nodes int) bool { domains, keyed = domains+1, keyed+nodes; return true })
	if selKey, selValue, selNodes := rarestSelectorLabel(snap, pod, c.honorAffinty); selNodes >= 0 && selNodes*domains < keyed {
		seen := map[string]bool{}
		snap.ForEachNodeInDomain(selKey, selValue, func(ni *snapshot.NodeInfo) bool {
			if v, ok := ni.Node.Labels[c.key]; ok && !seen[v] && s.eligible(c, ni.Node, pod, na) {
				seen[v] = true
				c.domains = append(c.domains, v)
			}
			return true
		})
		return c.domains
	}
	snap.ForEachDomain(c.key, func(v string, _ int) bool {
		snap.ForEachNodeInDomain(c.key, v, func(ni *snapshot.NodeInfo) bool {
			if s.eligible(c, ni.Node, pod, na) {
				c.domains = append(c.domains, v)
				return false
			}
			return true
		})
		return true
	})
	return c.domains
}

// rarestSelectorLabel is the entry of the pod's node selector that the
// fewest nodes carry, and how many; nodes -1 when the selector is empty or
// not honoured.
func rarestSelectorLabel(snap *snapshot.Snapshot, pod *v1.Pod, honoured bool) (key, value string, nodes int) {
	nodes = -1
	if !honoured {
		return "", "", -1
	}
	for k, v := range pod.Spec.NodeSelector {
		if n := snap.DomainSize(k, v); nodes < 0 || n < nodes || (n == nodes && k < key) {
			key, value, nodes = k, v, n
		}
	}
	return key, value, nodes
}

// eligible: the node has every constraint's key and passes c's node
// inclusion policies.
func (s *spreadState) eligible(c *spreadConstraint, node *v1.Node, pod *v1.Pod, na nodeaffinity.RequiredNodeAffinity) bool {
	if !hasAllKeys(node.Labels, s.constraints) {
		return false
	}
	if c.honorAffinty {
		if ok, _ := na.Match(node); !ok {
			return false
		}
	}
	return !c.honorTaints || untoleratedTaint(node, pod.Spec.Tolerations) < 0
}

func (s *spreadState) check(pod *v1.Pod, node *v1.Node) Result {
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := node.Labels[c.key]
		if !ok {
			return Result{Predicate: PodTopologySpread, Reason: ReasonSpreadMissingLabel, Detail: c.key}
		}
		if skew := c.counts[v] + c.selfMatch - c.min; skew > c.maxSkew {
			return Result{Predicate: PodTopologySpread, Reason: ReasonSpreadSkew, Detail: c.key,
				Wanted: int64(skew), Allocatable: int64(c.maxSkew)}
		}
	}
	return Result{}
}

// parseSpread returns the pod's DoNotSchedule constraints, never nil so that
// parsing happens once. matchLabelKeys are merged into the selector as the
// scheduler does. The selectors were validated with the pod.
func parseSpread(pod *v1.Pod) []spreadConstraint {
	out := []spreadConstraint{}
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != v1.DoNotSchedule {
			continue
		}
		sel, _ := metav1.LabelSelectorAsSelector(c.LabelSelector)
		sel = mergeMatchLabelKeys(sel, c.MatchLabelKeys, pod.Labels)
		sc := spreadConstraint{
			maxSkew:      int(c.MaxSkew),
			key:          c.TopologyKey,
			selector:     sel,
			minDomains:   1,
			honorAffinty: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor,
			honorTaints:  c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor,
		}
		if c.MinDomains != nil {
			sc.minDomains = int(*c.MinDomains)
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			sc.selfMatch = 1
		}
		out = append(out, sc)
	}
	return out
}

func mergeMatchLabelKeys(sel labels.Selector, keys []string, podLabels map[string]string) labels.Selector {
	set := labels.Set{}
	for _, k := range keys {
		if v, ok := podLabels[k]; ok {
			set[k] = v
		}
	}
	if len(set) == 0 {
		return sel
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return sel
	}
	merged := labels.SelectorFromSet(set)
	return merged.Add(reqs...)
}

func hasAllKeys(nodeLabels map[string]string, cs []spreadConstraint) bool {
	for i := range cs {
		if _, ok := nodeLabels[cs[i].key]; !ok {
			return false
		}
	}
	return true
}
