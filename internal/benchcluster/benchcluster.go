// Package benchcluster builds the large clusters the benchmarks run on, so
// that scale-up, scale-down and the whole loop are measured on the same
// shapes.
package benchcluster

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/slim"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// zones returns the three zones of the mixed cluster.
func zones() []string { return []string{"zone-a", "zone-b", "zone-c"} }

// shape is one machine shape of the mixed cluster.
type shape struct {
	name      string
	cpu, mem  string
	gpus      int64
	accel     string
	pricePerH float64
}

var shapes = []shape{
	{name: "cpu-m", cpu: "16", mem: "64Gi", pricePerH: 0.77},
	{name: "cpu-l", cpu: "32", mem: "128Gi", pricePerH: 1.54},
	{name: "gpu-a10g", cpu: "48", mem: "192Gi", gpus: 4, accel: "nvidia-a10g", pricePerH: 5.67},
}

// Template returns the template node of a shape in a zone.
func template(s shape, zone string) *v1.Node {
	b := builder.Node("template-"+s.name+"-"+zone).CPU(s.cpu).Memory(s.mem).Zone(zone).Label("shape", s.name)
	if s.gpus > 0 {
		b.GPU(s.gpus).Label("k8s.amazonaws.com/accelerator", s.accel).Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule)
	}
	return b.Build()
}

// Owned marks a pod as owned by a ReplicaSet.
func Owned(p *v1.Pod, rs string) *v1.Pod {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
		UID: types.UID("rs-" + rs), Controller: &yes}}
	return p
}

// ProviderIDPrefix starts the providerID of every node Mixed makes.
const ProviderIDPrefix = "bench://"

// Mixed builds the 5,000-node, 150,000-pod cluster of the benchmarks:
// ten groups (three shapes in three zones, plus an empty spot GPU group),
// nodes spread over the groups, thirty ReplicaSet pods per node using about
// 85% of cpu and memory (every tenth node holds a tenth of that), GPU pods
// on GPU nodes asking for one GPU each. Each pod goes through the
// informers' transform (pkg/slim), so the pods share what a live cache's
// pods share: the core is measured on the objects it reads in production.
func Mixed(nodes, podsPerNode int) (*snapshot.Snapshot, error) {
	s := snapshot.New()
	cache := slim.New()
	var groups []string
	for _, sh := range shapes {
		for _, z := range zones() {
			id := sh.name + "-" + z
			g := snapshot.NodeGroup{ID: id, MaxSize: nodes, Template: template(sh, z), PricePerHour: sh.pricePerH, InstanceType: sh.name}
			if err := s.SetNodeGroup(g); err != nil {
				return nil, err
			}
			groups = append(groups, id)
		}
	}
	spot := snapshot.NodeGroup{ID: "gpu-a10g-spot-zone-a", MaxSize: 100, Template: template(shapes[2], "zone-a"), PricePerHour: 2.1, Spot: true}
	if err := s.SetNodeGroup(spot); err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for i := 0; i < nodes; i++ {
		gid := groups[i%len(groups)]
		g := s.NodeGroup(gid)
		n := g.Template.DeepCopy()
		n.Name = fmt.Sprintf("%s-%05d", gid, i)
		n.Labels[v1.LabelHostname] = n.Name
		n.Spec.ProviderID = ProviderIDPrefix + n.Name
		if err := s.AddNodeInGroup(n, gid); err != nil {
			return nil, err
		}
		counts[gid]++
		perNode := podsPerNode
		if i%10 == 9 {
			perNode = podsPerNode / 10 // every tenth node is nearly idle: scale-down candidates
		}
		if err := fill(s, cache, n, perNode, podsPerNode, i); err != nil {
			return nil, err
		}
	}
	for id, c := range counts {
		g := *s.NodeGroup(id)
		g.TargetSize = c
		if err := s.SetNodeGroup(g); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// fill puts count pods on a node, each sized so that full (podsPerNode)
// would use about 85% of it.
func fill(s *snapshot.Snapshot, cache *slim.Transformer, n *v1.Node, count, podsPerNode, i int) error {
	cpu := n.Status.Allocatable.Cpu().MilliValue() * 85 / 100 / int64(podsPerNode)
	mem := n.Status.Allocatable.Memory().Value() * 85 / 100 / int64(podsPerNode)
	gpus := n.Status.Allocatable.Name("nvidia.com/gpu", "").Value()
	for j := 0; j < count; j++ {
		app := fmt.Sprintf("app-%d", (i*7+j)%200)
		b := builder.Pod(fmt.Sprintf("%s-%d", n.Name, j)).Namespace(fmt.Sprintf("team-%d", j%5)).
			Request(v1.ResourceCPU, fmt.Sprintf("%dm", cpu)).Request(v1.ResourceMemory, fmt.Sprint(mem)).
			Label("app", app).OnNode(n.Name)
		if gpus > 0 && int64(j) < gpus-1 {
			b.GPU(1).Toleration("nvidia.com/gpu")
		} else if gpus > 0 {
			b.Toleration("nvidia.com/gpu")
		}
		p := Owned(b.Build(), app).DeepCopy()
		if _, err := cache.Transform(p); err != nil {
			return err
		}
		if err := s.AddPod(p); err != nil {
			return err
		}
	}
	return nil
}

// Pending makes n pending pods for the mixed cluster: mostly plain CPU pods
// of a few Deployments, some GPU pods, and a twentieth with hostname
// anti-affinity or zone spread.
func Pending(n int) []*v1.Pod {
	out := make([]*v1.Pod, 0, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("pending-%05d", i)
		var b *builder.PodBuilder
		switch {
		case i%20 == 0:
			b = builder.Pod(name).CPU("2").Memory("4Gi").Label("app", "spread").Spread(v1.LabelTopologyZone, 1, "app", "spread")
		case i%20 == 1:
			b = builder.Pod(name).CPU("2").Memory("4Gi").Label("app", "solo").AntiAffinity(v1.LabelHostname, "app", "solo")
		case i%10 == 2:
			b = builder.Pod(name).CPU("8").Memory("32Gi").GPU(1).Toleration("nvidia.com/gpu").Label("app", "train")
		default:
			b = builder.Pod(name).CPU("20").Memory("64Gi").Label("app", fmt.Sprintf("web-%d", i%4))
		}
		out = append(out, Owned(b.Build(), b.Build().Labels["app"]))
	}
	return out
}

// FreshLabel marks the nodes of the groups AddFreshGroups makes: pods
// that select it fit no node of Mixed, so they need new nodes.
const FreshLabel = "bench.gpuscale.io/fresh"

// AddFreshGroups adds, in the first zone, one empty group of each
// shape whose template carries FreshLabel, each up to max nodes.
func AddFreshGroups(s *snapshot.Snapshot, max int) error {
	for _, sh := range shapes {
		t := template(sh, zones()[0])
		t.Name = "template-fresh-" + sh.name
		t.Labels[FreshLabel] = "true"
		g := snapshot.NodeGroup{ID: "fresh-" + sh.name, MaxSize: max, Template: t, PricePerHour: sh.pricePerH, InstanceType: sh.name}
		if err := s.SetNodeGroup(g); err != nil {
			return err
		}
	}
	return nil
}

// Fresh makes pods select FreshLabel, so that they need the groups of
// AddFreshGroups. It changes the pods in place and returns them.
func Fresh(pods []*v1.Pod) []*v1.Pod {
	for _, p := range pods {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[FreshLabel] = "true"
	}
	return pods
}

// Burst makes n pending pods of a few Deployments, each a tenth of a
// 32-core node (3 cpu, 12Gi): with Fresh, about n/10 new nodes.
func Burst(n int) []*v1.Pod {
	out := make([]*v1.Pod, 0, n)
	for i := 0; i < n; i++ {
		app := fmt.Sprintf("burst-%d", i%8)
		out = append(out, Owned(builder.Pod(fmt.Sprintf("burst-%05d", i)).CPU("3").Memory("12Gi").Label("app", app).Build(), app))
	}
	return out
}
