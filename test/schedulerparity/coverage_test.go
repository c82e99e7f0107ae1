package schedulerparity

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// wantFeatures must each occur both in a generated case where the pod fits
// some node and in one where it is rejected by some node. The list is
// fixed so that a generator change which silently drops a feature fails.
var wantFeatures = []string{
	"request:cpu", "request:memory", "request:ephemeral-storage", "request:nvidia.com/gpu",
	"request:nvidia.com/mig-1g.10gb", "request:nvidia.com/mig-3g.40gb",
	"init", "sidecar", "overhead", "limit>request", "limit=request",
	"taint:NoSchedule", "taint:NoExecute", "taint:PreferNoSchedule", "node:unschedulable", "node:unschedulable+taint",
	"toleration:Equal", "toleration:Exists", "toleration:emptyKey", "toleration:anyEffect", "toleration:unschedulable",
	"nodeSelector", "nodeAffinity:In", "nodeAffinity:NotIn", "nodeAffinity:Exists", "nodeAffinity:DoesNotExist",
	"nodeAffinity:Gt", "nodeAffinity:Lt", "nodeAffinity:matchFields", "nodeAffinity:multiTerm",
	"hostPort:TCP", "hostPort:UDP", "hostPort:anyIP", "hostPort:specificIP", "existing:hostPort",
	"podAffinity", "podAntiAffinity", "podAffinity:preferred", "affinityKey:" + v1.LabelHostname,
	"affinityKey:" + v1.LabelTopologyZone, "affinityKey:" + RackKey, "affinity:matchLabels",
	"affinity:In", "affinity:NotIn", "affinity:Exists", "affinity:DoesNotExist", "affinity:namespaces",
	"affinity:namespaceSelector", "existing:antiAffinity", "existing:affinity", "existing:terminating",
	"spread:DoNotSchedule", "spread:ScheduleAnyway", "spread:minDomains", "spreadKey:" + v1.LabelTopologyZone,
	"spreadKey:" + v1.LabelHostname, "spreadKey:" + RackKey, "spread:nodeAffinityPolicy:Honor",
	"spread:nodeAffinityPolicy:Ignore", "spread:nodeTaintsPolicy:Honor", "spread:nodeTaintsPolicy:Ignore",
	"pvc:bound", "pvc:" + wffcClass, "pv:multiZone",
	"pv:" + v1.LabelTopologyZone, "pv:" + v1.LabelFailureDomainBetaZone, "pv:" + v1.LabelTopologyRegion,
	"pv:" + v1.LabelFailureDomainBetaRegion, "pv:unlabelled", "nodeName",
	"pv:nodeAffinity", "pv:nodeAffinity:" + CSIZoneKey, "pv:nodeAffinity:multiTerm", "pvc:" + zonalClass,
	"pvc:" + localClass, "pvc:selectedNode", "ephemeral:bound", "ephemeral:unbound",
	"rwop:free", "rwop:otherNamespace", "disk:gcePersistentDisk", "disk:awsElasticBlockStore", "disk:iscsi", "disk:rbd",
	"disk:onNode",
}

// infeasibleFeatures must occur, and only in cases no node accepts: no node
// offers the FPGA resource, and VolumeZone's PreFilter turns away a pod
// whose claim is missing or unbound in an Immediate class.
var infeasibleFeatures = []string{"request:" + string(FPGA), "pvc:missing", "pvc:" + immediateClass + ":unbound",
	"pvc:prebound", "pvc:lost", "pvc:deleting", "pv:missing", "ephemeral:notOwned", "rwop:inUse"}

// features tags a generated case with what it exercises.
func features(c *Cluster, p *v1.Pod) []string {
	var f []string
	add := func(ok bool, tag string) {
		if ok {
			f = append(f, tag)
		}
	}
	for _, ctr := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
		for r, q := range ctr.Resources.Requests {
			f = append(f, "request:"+string(r))
			if l, ok := ctr.Resources.Limits[r]; ok {
				add(l.Cmp(q) > 0, "limit>request")
				add(l.Cmp(q) == 0 && !strings.Contains(string(r), "/"), "limit=request")
			}
		}
		add(ctr.RestartPolicy != nil, "sidecar")
		for _, hp := range ctr.Ports {
			f = append(f, "hostPort:"+string(hp.Protocol))
			add(hp.HostIP == "" || hp.HostIP == "0.0.0.0", "hostPort:anyIP")
			add(hp.HostIP != "" && hp.HostIP != "0.0.0.0", "hostPort:specificIP")
		}
	}
	add(len(p.Spec.InitContainers) > 0, "init")
	add(p.Spec.Overhead != nil, "overhead")
	for _, t := range p.Spec.Tolerations {
		add(t.Operator == v1.TolerationOpExists, "toleration:Exists")
		add(t.Operator != v1.TolerationOpExists, "toleration:Equal")
		add(t.Key == "", "toleration:emptyKey")
		add(t.Effect == "", "toleration:anyEffect")
		add(t.Key == v1.TaintNodeUnschedulable, "toleration:unschedulable")
	}
	for _, n := range c.Nodes {
		for _, t := range n.Spec.Taints {
			f = append(f, "taint:"+string(t.Effect))
		}
		add(n.Spec.Unschedulable, "node:unschedulable")
		add(n.Spec.Unschedulable && len(n.Spec.Taints) > 0 && n.Spec.Taints[len(n.Spec.Taints)-1].Key == v1.TaintNodeUnschedulable, "node:unschedulable+taint")
	}
	add(len(p.Spec.NodeSelector) > 0, "nodeSelector")
	if a := p.Spec.Affinity; a != nil {
		if a.NodeAffinity != nil {
			terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			add(len(terms) > 1, "nodeAffinity:multiTerm")
			for _, t := range terms {
				for _, e := range t.MatchExpressions {
					f = append(f, "nodeAffinity:"+string(e.Operator))
				}
				add(len(t.MatchFields) > 0, "nodeAffinity:matchFields")
			}
		}
		var terms []v1.PodAffinityTerm
		if a.PodAffinity != nil {
			add(len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0, "podAffinity")
			add(len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0, "podAffinity:preferred")
			terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		}
		if a.PodAntiAffinity != nil {
			f = append(f, "podAntiAffinity")
			terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		}
		for _, t := range terms {
			f = append(f, "affinityKey:"+t.TopologyKey)
			add(len(t.LabelSelector.MatchLabels) > 0, "affinity:matchLabels")
			for _, e := range t.LabelSelector.MatchExpressions {
				f = append(f, "affinity:"+string(e.Operator))
			}
			add(len(t.Namespaces) > 0, "affinity:namespaces")
			add(t.NamespaceSelector != nil, "affinity:namespaceSelector")
		}
	}
	for _, e := range c.Pods {
		add(e.Spec.Affinity != nil && e.Spec.Affinity.PodAntiAffinity != nil, "existing:antiAffinity")
		add(e.Spec.Affinity != nil && e.Spec.Affinity.PodAffinity != nil, "existing:affinity")
		add(e.DeletionTimestamp != nil, "existing:terminating")
		add(len(e.Spec.Containers[0].Ports) > 0, "existing:hostPort")
	}
	for _, t := range p.Spec.TopologySpreadConstraints {
		f = append(f, "spread:"+string(t.WhenUnsatisfiable), "spreadKey:"+t.TopologyKey)
		add(t.MinDomains != nil, "spread:minDomains")
		if t.NodeAffinityPolicy != nil {
			f = append(f, "spread:nodeAffinityPolicy:"+string(*t.NodeAffinityPolicy))
		}
		if t.NodeTaintsPolicy != nil {
			f = append(f, "spread:nodeTaintsPolicy:"+string(*t.NodeTaintsPolicy))
		}
	}
	f = append(f, volumeFeatures(c, p)...)
	f = append(f, limitFeatures(c, p)...)
	add(p.Spec.NodeName != "", "nodeName")
	return append(f, draFeatures(c, p)...)
}

// TestGeneratorCoverage runs the oracle over many generated cases. Every
// filter plugin must reject some node, and every feature in wantFeatures
// must appear in both a case where the pod fits somewhere and one where
// some node rejects it, so a parity run over Generate exercises each path.
// Run with -v for the tally of rejection reasons.
func TestGeneratorCoverage(t *testing.T) {
	seeds := int64(3000)
	if testing.Short() {
		seeds = 300
	}
	reasons := map[string]int{}  // "plugin: reason" of each rejected node
	seen := map[string]*[2]int{} // feature -> cases with [a feasible, an infeasible] node
	var feasible, infeasible, podsWithNoNode, aborted int
	for seed := int64(0); seed < seeds; seed++ {
		c, p := Generate(rand.New(rand.NewSource(seed)))
		o, err := NewOracle(c)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		verdicts, err := o.Explain(p)
		var cycle *CycleError
		if errors.As(err, &cycle) {
			aborted++ // the scheduler aborts the cycle: no verdicts to tally
			continue
		}
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		var some [2]bool
		for _, v := range verdicts {
			if v.Feasible {
				feasible++
				some[0] = true
				continue
			}
			infeasible++
			some[1] = true
			plugin := v.Plugin
			if plugin == "" {
				plugin = "(PreFilterResult)"
			}
			reasons[fmt.Sprintf("%s/%s: %s", v.Stage, plugin, strings.Join(v.Reasons, "; "))]++
		}
		if !some[0] {
			podsWithNoNode++
		}
		for _, tag := range features(c, p) {
			if seen[tag] == nil {
				seen[tag] = &[2]int{}
			}
			for i, ok := range some {
				if ok {
					seen[tag][i]++
				}
			}
		}
	}

	var lines []string
	for r, n := range reasons {
		lines = append(lines, fmt.Sprintf("%6d  %s", n, r))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(lines)))
	t.Logf("%d cases (%d aborted by a plugin error), %d with no feasible node; node verdicts: %d feasible, %d infeasible; rejections:\n%s",
		seeds, aborted, podsWithNoNode, feasible, infeasible, strings.Join(lines, "\n"))

	for _, pl := range FilterPlugins {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "/"+pl+":") }) {
			t.Errorf("no node was ever rejected by %s", pl)
		}
	}
	for _, tag := range slices.Concat(wantFeatures, draWantFeatures, limitWantFeatures) {
		if s := seen[tag]; s == nil || s[0] == 0 || s[1] == 0 {
			t.Errorf("feature %q lacks a feasible or an infeasible case: %v", tag, s)
		}
	}
	for _, tag := range slices.Concat(infeasibleFeatures, draInfeasibleFeatures) {
		if s := seen[tag]; s == nil || s[0] != 0 || s[1] == 0 {
			t.Errorf("feature %q should occur, always infeasible: %v", tag, s)
		}
	}
}
