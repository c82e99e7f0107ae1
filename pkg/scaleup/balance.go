package scaleup

import (
	"fmt"
	"math"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// balancingIgnoredLabels may differ between similar groups: where a node is,
// what it is called, and provider bookkeeping that names the group itself.
// They are the labels the upstream Cluster Autoscaler ignores
// (processors/nodegroupset: BasicIgnoredLabels, and the AWS and GCE
// comparators' own; AWS's zone-id names the zone across accounts), and
// the GKE node-pool name.
var balancingIgnoredLabels = []string{
	v1.LabelHostname,
	v1.LabelTopologyZone, v1.LabelFailureDomainBetaZone,
	v1.LabelTopologyRegion, v1.LabelFailureDomainBetaRegion,
	"beta.kubernetes.io/fluentd-ds-ready", "kops.k8s.io/instancegroup",
	"cloud.google.com/gke-nodepool", "topology.gke.io/zone",
	"eks.amazonaws.com/nodegroup", "alpha.eksctl.io/nodegroup-name", "alpha.eksctl.io/instance-id",
	"k8s.amazonaws.com/eniConfig", "lifecycle", "topology.ebs.csi.aws.com/zone", "topology.k8s.aws/zone-id",
}

// maxMemoryDifference is how far memory may differ between similar groups:
// the same machine type reports slightly different memory across zones.
const maxMemoryDifference = 0.015

// balance spreads the chosen option's nodes over groups similar to it that
// could take the same pods, smallest group first, each within its max size.
// Without --balance-similar-node-groups it is the chosen option alone.
// keys are the topology keys the pods require pod affinity on: only groups
// in the chosen group's domain of each share the nodes (zonal.go).
func (r *run) balance(chosen expander.Option, options []expander.Option, keys []string) []ScaleUp {
	why := "chosen by --expander=" + r.opts.Expander
	if !r.opts.BalanceSimilarNodeGroups {
		return []ScaleUp{scaleUpOf(chosen.Group, chosen.NodeCount, chosen.PodCount, why)}
	}
	groups := []*snapshot.NodeGroup{chosen.Group}
	apart := 0
	for _, o := range options {
		if o.Group.ID == chosen.Group.ID || o.PodCount != chosen.PodCount || !r.similar(chosen.Group, o.Group) {
			continue
		}
		if !sameDomains(chosen.Group, o.Group, keys) {
			apart++
			continue
		}
		groups = append(groups, o.Group)
	}
	if apart > 0 {
		why += "; " + keptInDomain(chosen.Group, keys, apart)
	}
	if len(groups) == 1 {
		return []ScaleUp{scaleUpOf(chosen.Group, chosen.NodeCount, chosen.PodCount, why)}
	}
	deltas := spread(groups, chosen.NodeCount)
	var out []ScaleUp
	for i, g := range groups {
		if deltas[i] == 0 {
			continue
		}
		share := int(math.Round(float64(chosen.PodCount) * float64(deltas[i]) / float64(chosen.NodeCount)))
		out = append(out, scaleUpOf(g, deltas[i], share,
			fmt.Sprintf("%s, balanced over %d similar groups", why, len(groups))))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

// spread hands out n nodes one at a time to the group with the smallest
// resulting target that still has room; ties go to the earlier group.
func spread(groups []*snapshot.NodeGroup, n int) []int {
	deltas := make([]int, len(groups))
	for ; n > 0; n-- {
		best := -1
		for i, g := range groups {
			if g.TargetSize+deltas[i] >= g.MaxSize {
				continue
			}
			if best < 0 || g.TargetSize+deltas[i] < groups[best].TargetSize+deltas[best] {
				best = i
			}
		}
		if best < 0 {
			break
		}
		deltas[best]++
	}
	return deltas
}

func scaleUpOf(g *snapshot.NodeGroup, delta, pods int, why string) ScaleUp {
	return ScaleUp{Group: g.ID, Delta: delta, NewTarget: g.TargetSize + delta, Pods: pods, Why: why}
}

// similar: same taints, same allocatable (memory within 1.5%), and the same
// labels except zone, hostname and the ignored ones. A label that only one
// group carries therefore exempts it from balancing.
func (r *run) similar(a, b *snapshot.NodeGroup) bool {
	ta, tb := a.Template, b.Template
	if !sameResources(ta.Status.Allocatable, tb.Status.Allocatable) {
		return false
	}
	if !sameTaints(ta.Spec.Taints, tb.Spec.Taints) {
		return false
	}
	ignored := func(k string) bool {
		for _, l := range balancingIgnoredLabels {
			if k == l {
				return true
			}
		}
		for _, l := range r.opts.BalancingIgnoreLabels {
			if k == l {
				return true
			}
		}
		return false
	}
	for k, v := range ta.Labels {
		if !ignored(k) && tb.Labels[k] != v {
			return false
		}
	}
	for k := range tb.Labels {
		if _, ok := ta.Labels[k]; !ok && !ignored(k) {
			return false
		}
	}
	return true
}

func sameResources(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok {
			return false
		}
		if name == v1.ResourceMemory {
			x, y := float64(qa.Value()), float64(qb.Value())
			if math.Abs(x-y) > maxMemoryDifference*math.Max(x, y) {
				return false
			}
			continue
		}
		if qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

func sameTaints(a, b []v1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[v1.Taint]int{}
	for _, t := range a {
		t.TimeAdded = nil
		seen[t]++
	}
	for _, t := range b {
		t.TimeAdded = nil
		if seen[t] == 0 {
			return false
		}
		seen[t]--
	}
	return true
}
