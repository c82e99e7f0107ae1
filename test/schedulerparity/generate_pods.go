package schedulerparity

// Pod generation: resources, ports, tolerations, node and pod affinity,
// topology spread. See generate.go for the vocabularies these draw from.

import (
	"fmt"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func (g *gen) basePod(name string) *v1.Pod {
	l := map[string]string{}
	for _, v := range podLabels {
		if g.chance(0.65) {
			l[v.key] = pick(g, v.values)
		}
	}
	// Most pods share one namespace: spread and default-scoped affinity
	// only count pods of the pending pod's own namespace.
	ns := namespaces[0].name
	if g.chance(0.4) {
		ns = pick(g, namespaces).name
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID("pod-uid-" + name), Labels: l,
		},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways},
	}
}

// resources draws one container's cpu, memory and ephemeral-storage
// requests; big adds values that overflow some or all nodes. Limits are
// absent, equal to the requests (what defaulting makes of limits given
// alone) or above them.
func (g *gen) resources(big bool) v1.ResourceRequirements {
	draw := func(p float64, small, large []string) (resource.Quantity, bool) {
		if !g.chance(p) {
			return resource.Quantity{}, false
		}
		if big && g.chance(0.15) {
			return resource.MustParse(pick(g, large)), true
		}
		return resource.MustParse(pick(g, small)), true
	}
	req := v1.ResourceList{}
	for _, d := range []struct {
		name         v1.ResourceName
		p            float64
		small, large []string
	}{
		{v1.ResourceCPU, 0.85, []string{"50m", "100m", "250m", "500m"}, []string{"2", "3", "6", "12"}},
		{v1.ResourceMemory, 0.85, []string{"64Mi", "256Mi", "512Mi", "1Gi"}, []string{"2Gi", "6Gi", "12Gi", "40Gi"}},
		{v1.ResourceEphemeralStorage, 0.15, []string{"1Gi", "2Gi"}, []string{"8Gi", "60Gi", "200Gi"}},
	} {
		if q, ok := draw(d.p, d.small, d.large); ok {
			req[d.name] = q
		}
	}
	var lim v1.ResourceList
	switch x := g.r.Float64(); {
	case x < 0.3:
		lim = req.DeepCopy()
	case x < 0.45:
		lim = v1.ResourceList{}
		for k, q := range req {
			q = q.DeepCopy()
			q.Add(q)
			lim[k] = q
		}
	}
	if len(req) == 0 {
		req = nil
	}
	return v1.ResourceRequirements{Requests: req, Limits: lim}
}

// addExtended requests an extended resource. Validation insists on
// limit == request for them, so both are set.
func addExtended(c *v1.Container, name v1.ResourceName, qty string) {
	if c.Resources.Requests == nil {
		c.Resources.Requests = v1.ResourceList{}
	}
	if c.Resources.Limits == nil {
		c.Resources.Limits = v1.ResourceList{}
	}
	c.Resources.Requests[name] = resource.MustParse(qty)
	c.Resources.Limits[name] = resource.MustParse(qty)
}

// hostPorts returns 1–2 host ports, distinct in (port, protocol) since
// validation rejects a pod that declares the same pair twice.
func (g *gen) hostPorts() []v1.ContainerPort {
	var out []v1.ContainerPort
	seen := map[string]bool{}
	for range 1 + g.n(2) {
		p := v1.ContainerPort{
			HostPort: pick(g, []int32{8080, 9090, 53}),
			Protocol: pick(g, []v1.Protocol{v1.ProtocolTCP, v1.ProtocolTCP, v1.ProtocolUDP}),
			HostIP:   pick(g, []string{"", "0.0.0.0", "10.0.0.1", "10.0.0.2"}),
		}
		p.ContainerPort = p.HostPort
		k := fmt.Sprint(p.HostPort, p.Protocol)
		if !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

func (g *gen) runningPod(i int, nodes []*v1.Node) *v1.Pod {
	p := g.basePod(fmt.Sprintf("running-%d", i))
	n := pick(g, nodes)
	p.Spec.NodeName = n.Name
	for j := range 1 + g.n(2) {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{
			Name: fmt.Sprintf("c%d", j), Image: "busybox", Resources: g.resources(false),
		})
	}
	// Bound pods only hold devices their node has: the kubelet would have
	// refused anything else. Taking all of them leaves the node full.
	for _, r := range []v1.ResourceName{GPU, MIG1g, MIG3g} {
		if have := n.Status.Allocatable[r]; have.Value() > 0 && g.chance(0.3) {
			addExtended(&p.Spec.Containers[0], r, strconv.Itoa(1+g.n(int(have.Value()))))
		}
	}
	if g.chance(0.2) {
		p.Spec.Containers[0].Ports = g.hostPorts()
	}
	if g.chance(0.15) {
		// Existing pods' required anti-affinity constrains newcomers too.
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{g.podAffinityTerm(p)},
		}}
	} else if g.chance(0.07) {
		// Existing pods' required affinity, by contrast, must not matter.
		p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{g.podAffinityTerm(p)},
		}}
	}
	if g.chance(0.05) {
		// Terminating pods still hold resources but are not counted by
		// topology spread.
		p.DeletionTimestamp = ptr(metav1.Unix(1700000000, 0))
		p.DeletionGracePeriodSeconds = ptr[int64](30)
	}
	p.Status.Phase = v1.PodRunning
	return p
}

func (g *gen) pendingPod(c *Cluster) *v1.Pod {
	p := g.basePod("pending")
	p.Status.Phase = v1.PodPending
	for j := range 1 + g.n(2) + g.n(2) {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{
			Name: fmt.Sprintf("app%d", j), Image: "busybox", Resources: g.resources(j == 0),
		})
	}
	for j := range g.n(2) + g.n(2) {
		ic := v1.Container{Name: fmt.Sprintf("init%d", j), Image: "busybox", Resources: g.resources(g.chance(0.5))}
		if g.chance(0.4) {
			ic.RestartPolicy = ptr(v1.ContainerRestartPolicyAlways) // sidecar
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, ic)
	}
	// At most one device kind per pod, on any container: requests made by a
	// plain init container only need to fit while it runs.
	target := &p.Spec.Containers[g.n(len(p.Spec.Containers))]
	if n := len(p.Spec.InitContainers); n > 0 && g.chance(0.25) {
		target = &p.Spec.InitContainers[g.n(n)]
	}
	switch x := g.r.Float64(); {
	case x < 0.12:
		addExtended(target, GPU, pick(g, []string{"1", "1", "2", "4", "8"}))
	case x < 0.16:
		addExtended(target, MIG1g, pick(g, []string{"1", "2"}))
	case x < 0.19:
		addExtended(target, MIG3g, "1")
	case x < 0.205:
		addExtended(target, FPGA, "1")
	}
	if g.chance(0.15) {
		p.Spec.RuntimeClassName = ptr("kata")
		p.Spec.Overhead = v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse(pick(g, []string{"250m", "1"})),
			v1.ResourceMemory: resource.MustParse(pick(g, []string{"120Mi", "2Gi"})),
		}
	}
	if g.chance(0.25) {
		// Ports on a sidecar count; ports on a plain init container do not.
		var ctrs []*v1.Container
		for i := range p.Spec.Containers {
			ctrs = append(ctrs, &p.Spec.Containers[i])
		}
		for i := range p.Spec.InitContainers {
			ctrs = append(ctrs, &p.Spec.InitContainers[i])
		}
		pick(g, ctrs).Ports = g.hostPorts()
	}
	if g.chance(0.5) {
		for _, j := range g.r.Perm(len(tolerationPool))[:1+g.n(3)] {
			p.Spec.Tolerations = append(p.Spec.Tolerations, tolerationPool[j])
		}
	}
	var tainted []*v1.Node
	for _, n := range c.Nodes {
		if len(n.Spec.Taints) > 0 {
			tainted = append(tainted, n)
		}
	}
	if len(tainted) > 0 && g.chance(0.6) {
		// Tolerate one taint some node actually has, to make tainted nodes
		// feasible often enough.
		n := pick(g, tainted)
		tt := pick(g, n.Spec.Taints)
		tol := v1.Toleration{Key: tt.Key, Operator: v1.TolerationOpExists, Effect: tt.Effect}
		if g.chance(0.5) {
			tol.Operator, tol.Value = v1.TolerationOpEqual, tt.Value
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, tol)
	}
	if g.chance(0.1) {
		// Anchored on one node's labels so the selector usually matches
		// somewhere, but not everywhere; sometimes drawn blind.
		anchor := pick(g, c.Nodes).Labels
		p.Spec.NodeSelector = map[string]string{}
		for range 1 + g.n(2)*g.n(2) {
			v := pick(g, selectorLabels)
			val, ok := anchor[v.key]
			if !ok || g.chance(0.3) {
				val = pick(g, v.values)
			}
			p.Spec.NodeSelector[v.key] = val
		}
	}
	aff := &v1.Affinity{}
	if g.chance(0.15) {
		ns := &v1.NodeSelector{}
		for range 1 + g.n(2) + g.n(2)*g.n(2) {
			ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, g.nodeSelectorTerm(c.Nodes))
		}
		aff.NodeAffinity = &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: ns}
	}
	if g.chance(0.15) {
		aff.PodAffinity = &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: g.podAffinityTerms(p)}
	}
	if g.chance(0.2) {
		aff.PodAntiAffinity = &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: g.podAffinityTerms(p)}
	}
	if g.chance(0.1) {
		// Preferred terms only score; they must never filter.
		if aff.PodAffinity == nil {
			aff.PodAffinity = &v1.PodAffinity{}
		}
		aff.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []v1.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: g.podAffinityTerm(p)}}
	}
	if *aff != (v1.Affinity{}) {
		p.Spec.Affinity = aff
	}
	if g.chance(0.35) {
		p.Spec.TopologySpreadConstraints = g.spreadConstraints(p)
	}
	if g.chance(0.25) {
		g.addVolumes(c, p)
	}
	if g.chance(0.03) {
		// The scheduler never sees a pod that already names its node, but
		// the NodeName plugin is part of the filter set, so exercise it.
		p.Spec.NodeName = fmt.Sprintf("node-%d", g.n(len(c.Nodes)+1))
	}
	return p
}

func (g *gen) nodeSelectorTerm(all []*v1.Node) v1.NodeSelectorTerm {
	var t v1.NodeSelectorTerm
	nodes, anchor := len(all), pick(g, all).Labels
	for range g.n(3) {
		var req v1.NodeSelectorRequirement
		switch op := pick(g, []v1.NodeSelectorOperator{
			v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn, v1.NodeSelectorOpExists,
			v1.NodeSelectorOpDoesNotExist, v1.NodeSelectorOpGt, v1.NodeSelectorOpLt,
		}); op {
		case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
			v := pick(g, selectorLabels)
			req = v1.NodeSelectorRequirement{Key: v.key, Operator: op, Values: distinct(g, v.values)}
			// Bias In toward matching the anchor node, so that terms
			// rarely match nothing at all.
			if val, ok := anchor[v.key]; ok && op == v1.NodeSelectorOpIn && !slices.Contains(req.Values, val) && g.chance(0.6) {
				req.Values = append(req.Values, val)
			}
		case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
			req = v1.NodeSelectorRequirement{Key: GenerationKey, Operator: op, Values: []string{strconv.Itoa(1 + g.n(4))}}
		default:
			key := pick(g, []string{RackKey, "pool", "disk", v1.LabelFailureDomainBetaZone, GenerationKey})
			req = v1.NodeSelectorRequirement{Key: key, Operator: op}
		}
		t.MatchExpressions = append(t.MatchExpressions, req)
	}
	// matchFields on metadata.name takes exactly one value; an unknown
	// name is allowed and must simply match nothing.
	if len(t.MatchExpressions) == 0 || g.chance(0.3) {
		t.MatchFields = []v1.NodeSelectorRequirement{{
			Key:      metav1.ObjectNameField,
			Operator: pick(g, []v1.NodeSelectorOperator{v1.NodeSelectorOpIn, v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn}),
			Values:   []string{fmt.Sprintf("node-%d", g.n(nodes+1))},
		}}
		// Two In requirements in one term intersect; usually to nothing.
		if g.chance(0.15) {
			t.MatchFields = append(t.MatchFields, v1.NodeSelectorRequirement{
				Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{fmt.Sprintf("node-%d", g.n(nodes))},
			})
		}
	}
	return t
}

// distinct returns a non-empty random subset of vs.
func distinct(g *gen, vs []string) []string {
	var out []string
	for _, j := range g.r.Perm(len(vs))[:1+g.n(len(vs))] {
		out = append(out, vs[j])
	}
	return out
}

// podSelector is biased toward selecting self's own labels, which makes
// self-matching affinity and spread constraints common.
func (g *gen) podSelector(self *v1.Pod) *metav1.LabelSelector {
	if g.chance(0.05) {
		return &metav1.LabelSelector{} // selects every pod
	}
	s := &metav1.LabelSelector{}
	var own []labelVocab // self's labels, in vocabulary order for determinism
	for _, v := range podLabels {
		if val, ok := self.Labels[v.key]; ok {
			own = append(own, labelVocab{v.key, []string{val}})
		}
	}
	if len(own) > 0 && g.chance(0.5) {
		v := pick(g, own)
		s.MatchLabels = map[string]string{v.key: v.values[0]}
		if g.chance(0.5) {
			return s
		}
	}
	v := pick(g, podLabels)
	switch op := pick(g, []metav1.LabelSelectorOperator{
		metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist,
	}); op {
	case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
		s.MatchExpressions = append(s.MatchExpressions, metav1.LabelSelectorRequirement{Key: v.key, Operator: op, Values: distinct(g, v.values)})
	default:
		s.MatchExpressions = append(s.MatchExpressions, metav1.LabelSelectorRequirement{Key: v.key, Operator: op})
	}
	return s
}

func (g *gen) podAffinityTerms(self *v1.Pod) []v1.PodAffinityTerm {
	var ts []v1.PodAffinityTerm
	for range 1 + g.n(2) {
		ts = append(ts, g.podAffinityTerm(self))
	}
	return ts
}

func (g *gen) podAffinityTerm(self *v1.Pod) v1.PodAffinityTerm {
	t := v1.PodAffinityTerm{
		LabelSelector: g.podSelector(self),
		TopologyKey:   pick(g, []string{v1.LabelHostname, v1.LabelTopologyZone, v1.LabelTopologyZone, RackKey}),
	}
	// Neither field set means the pod's own namespace; an empty selector
	// means all namespaces; both set means the union.
	switch x := g.r.Float64(); {
	case x < 0.2:
		t.Namespaces = distinct(g, []string{"default", "team-a", "team-b", "absent"})
	case x < 0.3:
		t.NamespaceSelector = &metav1.LabelSelector{}
	case x < 0.4:
		t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": pick(g, []string{"prod", "dev"})}}
	case x < 0.45:
		t.Namespaces = []string{pick(g, namespaces).name}
		t.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: v1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{pick(g, namespaces).name}},
		}}
	}
	return t
}

func (g *gen) spreadConstraints(self *v1.Pod) []v1.TopologySpreadConstraint {
	var out []v1.TopologySpreadConstraint
	used := map[string]bool{} // validation forbids repeating (key, whenUnsatisfiable)
	for range 1 + g.n(2) {
		c := v1.TopologySpreadConstraint{
			MaxSkew:           pick(g, []int32{1, 1, 1, 2, 3}),
			TopologyKey:       pick(g, []string{v1.LabelTopologyZone, v1.LabelHostname, RackKey}),
			WhenUnsatisfiable: pick(g, []v1.UnsatisfiableConstraintAction{v1.DoNotSchedule, v1.DoNotSchedule, v1.ScheduleAnyway}),
			LabelSelector:     g.podSelector(self),
		}
		k := c.TopologyKey + string(c.WhenUnsatisfiable)
		if used[k] {
			continue
		}
		used[k] = true
		if c.WhenUnsatisfiable == v1.DoNotSchedule && g.chance(0.3) {
			c.MinDomains = ptr(int32(1 + g.n(4)))
		}
		policies := []*v1.NodeInclusionPolicy{nil, ptr(v1.NodeInclusionPolicyHonor), ptr(v1.NodeInclusionPolicyIgnore)}
		c.NodeAffinityPolicy, c.NodeTaintsPolicy = pick(g, policies), pick(g, policies)
		out = append(out, c)
	}
	return out
}
