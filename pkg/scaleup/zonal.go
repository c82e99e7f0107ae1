package scaleup

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Pods that require pod affinity on a topology key must all run in one
// domain of that key: co-scheduled workers that require each other in a
// zone, a gang pinned to a region. Balancing spreads nodes over similar
// groups precisely because they sit in different zones, so for such pods
// it would buy nodes where only the first pod may run (the scheduler puts
// the others next to it, and the rest stay idle). The upstream Cluster
// Autoscaler balances them all the same; gpuscale balances only over the
// similar groups in the chosen group's domain of every such key.

// affinityKeys are the sorted topology keys of the pods' required pod
// affinity terms.
func affinityKeys(pods []*v1.Pod) []string {
	var keys []string
	for _, p := range pods {
		a := p.Spec.Affinity
		if a == nil || a.PodAffinity == nil {
			continue
		}
		for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if !containsString(keys, t.TopologyKey) {
				keys = append(keys, t.TopologyKey)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// placedReps are the representatives of the classes the estimate placed
// some pods of: equivalent pods share their affinity.
func placedReps(classes []*Class, placed []int) []*v1.Pod {
	var out []*v1.Pod
	for i, n := range placed {
		if n > 0 {
			out = append(out, classes[i].Rep().Pod)
		}
	}
	return out
}

// sameDomains reports whether b's new nodes would share every key's domain
// with a's. The hostname names each node apart, so no other group shares it.
func sameDomains(a, b *snapshot.NodeGroup, keys []string) bool {
	for _, k := range keys {
		if k == v1.LabelHostname {
			return false
		}
		va, ok := a.Template.Labels[k]
		if !ok || b.Template.Labels[k] != va {
			return false
		}
	}
	return true
}

// keptInDomain says why similar groups were left out: the pods must share
// the chosen group's domains.
func keptInDomain(g *snapshot.NodeGroup, keys []string, left int) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k
		if v, ok := g.Template.Labels[k]; ok && k != v1.LabelHostname {
			parts[i] = fmt.Sprintf("%s=%s", k, v)
		}
	}
	return fmt.Sprintf("%d similar group(s) left out: the pods require pod affinity within one %s", left, strings.Join(parts, ", "))
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
