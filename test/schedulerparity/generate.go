package schedulerparity

import (
	"fmt"
	"math/rand"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Label keys and resource names the generator draws from. Vocabularies are
// deliberately tiny so that selectors, taints and topology domains collide
// often: a parity test learns little from selectors that never match.
const (
	RackKey       = "example.com/rack"       // custom topology key that only some nodes carry
	GenerationKey = "example.com/generation" // integer-valued, the target of Gt/Lt
	GPU           = v1.ResourceName("nvidia.com/gpu")
	MIG1g         = v1.ResourceName("nvidia.com/mig-1g.10gb")
	MIG3g         = v1.ResourceName("nvidia.com/mig-3g.40gb")
	// FPGA is an extended resource that no generated node offers.
	FPGA = v1.ResourceName("example.com/fpga")

	wffcClass      = "wffc"
	immediateClass = "standard"
)

var (
	zones      = []string{"zone-a", "zone-b", "zone-c"}
	racks      = []string{"rack-1", "rack-2"}
	namespaces = []struct{ name, env string }{{"default", "prod"}, {"team-a", "prod"}, {"team-b", "dev"}}
	// Slices of pairs rather than maps, so that a seed always yields the
	// same cluster (map iteration order is random).
	nodeLabels = []labelVocab{{"pool", []string{"gpu", "cpu", "batch"}}, {"disk", []string{"ssd", "hdd"}}}
	// selectorLabels are the node labels nodeSelector and node affinity use.
	selectorLabels = append(slices.Clip(nodeLabels), labelVocab{v1.LabelTopologyZone, zones})
	podLabels      = []labelVocab{{"app", []string{"web", "db", "train"}}, {"team", []string{"ml", "infra"}}}
	taintPool      = []v1.Taint{
		{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoExecute},
		{Key: "nvidia.com/gpu", Effect: v1.TaintEffectNoSchedule},
		{Key: "spot", Value: "true", Effect: v1.TaintEffectPreferNoSchedule},
		{Key: "spot", Value: "true", Effect: v1.TaintEffectNoExecute},
	}
	tolerationPool = []v1.Toleration{
		{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "gpu"},                                   // operator omitted: means Equal
		{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "infra"}, // effect omitted: any effect
		{Key: "dedicated", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute},
		{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
		{Key: "nvidia.com/gpu", Operator: v1.TolerationOpEqual, Effect: v1.TaintEffectNoSchedule}, // empty value
		{Key: "spot", Operator: v1.TolerationOpEqual, Value: "true", Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr[int64](300)},
		{Key: "spot", Operator: v1.TolerationOpEqual, Value: "false"},
		{Operator: v1.TolerationOpExists},                                   // empty key: tolerates every taint
		{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}, // every NoSchedule taint
		{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
		{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists},
		{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}, // wrong effect
	}
)

type labelVocab struct {
	key    string
	values []string
}

func ptr[T any](v T) *T { return &v }

type gen struct {
	r *rand.Rand
	// partitionable publishes GPUs as partitionable devices (the
	// DRAPartitionableDevices feature gate, off by default up to 1.37).
	partitionable bool
}

// Options vary what Generate draws.
type Options struct {
	// PartitionableDevices publishes GPUs with MIG-like partitions that
	// draw on shared counters; the scheduler must run with the
	// DRAPartitionableDevices gate on.
	PartitionableDevices bool
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }
func (g *gen) n(k int) int           { return g.r.Intn(k) }
func pick[T any](g *gen, xs []T) T   { return xs[g.r.Intn(len(xs))] }

// Generate returns a small random cluster and one pending pod. Everything is
// derived from r, so a seed reproduces a failure. Objects are what the API
// server would store, except that defaulting has not run: fields the
// scheduler reads (requests, protocols) are set explicitly instead.
func Generate(r *rand.Rand) (*Cluster, *v1.Pod) { return GenerateWith(r, Options{}) }

// GenerateWith is Generate with options.
func GenerateWith(r *rand.Rand, o Options) (*Cluster, *v1.Pod) {
	g := &gen{r: r, partitionable: o.PartitionableDevices}
	c := &Cluster{StorageClasses: g.volumeClasses()}
	for _, ns := range namespaces {
		c.Namespaces = append(c.Namespaces, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: ns.name, UID: types.UID("ns-" + ns.name),
			// The API server stamps the name label on every namespace;
			// namespaceSelectors may use it.
			Labels: map[string]string{v1.LabelMetadataName: ns.name, "env": ns.env},
		}})
	}
	for i := range 1 + g.n(8) {
		c.Nodes = append(c.Nodes, g.node(i))
	}
	for i := range g.n(min(21, 3*len(c.Nodes)+2)) {
		c.Pods = append(c.Pods, g.runningPod(i, c.Nodes))
	}
	pending := g.pendingPod(c)
	g.addDisks(c, pending)
	g.addDRA(c, pending)
	g.addAttachLimits(c, pending)
	return c, pending
}

func storageClass(name string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name, UID: types.UID("sc-" + name)},
		Provisioner:       "ebs.csi.aws.com",
		VolumeBindingMode: &mode,
	}
}

func regionOf(zone string) string {
	if zone == "zone-c" {
		return "region-2"
	}
	return "region-1"
}

func (g *gen) node(i int) *v1.Node {
	name := fmt.Sprintf("node-%d", i)
	l := map[string]string{v1.LabelHostname: name}
	zone := pick(g, zones)
	// Mostly GA topology labels; some nodes also carry the deprecated beta
	// ones, a few only those, and a few none (VolumeZone and topology
	// spread treat a missing key very differently).
	switch x := g.r.Float64(); {
	case x < 0.65:
		l[v1.LabelTopologyZone], l[v1.LabelTopologyRegion] = zone, regionOf(zone)
	case x < 0.85:
		l[v1.LabelTopologyZone], l[v1.LabelTopologyRegion] = zone, regionOf(zone)
		l[v1.LabelFailureDomainBetaZone], l[v1.LabelFailureDomainBetaRegion] = zone, regionOf(zone)
	case x < 0.93:
		l[v1.LabelFailureDomainBetaZone], l[v1.LabelFailureDomainBetaRegion] = zone, regionOf(zone)
	}
	if z, ok := l[v1.LabelTopologyZone]; ok && g.chance(0.6) {
		l[CSIZoneKey] = z // the CSI node plugin has registered
	}
	if g.chance(0.6) {
		l[RackKey] = pick(g, racks)
	}
	switch x := g.r.Float64(); {
	case x < 0.7:
		l[GenerationKey] = strconv.Itoa(1 + g.n(5))
	case x < 0.8:
		l[GenerationKey] = "new" // not an integer: Gt/Lt must not match
	}
	for _, v := range nodeLabels {
		if g.chance(0.7) {
			l[v.key] = pick(g, v.values)
		}
	}

	alloc := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse(pick(g, []string{"2", "4", "8", "16", "3500m"})),
		v1.ResourceMemory: resource.MustParse(pick(g, []string{"4Gi", "8Gi", "16Gi", "64Gi"})),
		v1.ResourcePods:   resource.MustParse(pick(g, []string{"1", "5", "110", "110", "110", "110", "110", "110", "110", "110", "110", "110", "110", "110"})),
	}
	if g.chance(0.9) {
		alloc[v1.ResourceEphemeralStorage] = resource.MustParse(pick(g, []string{"10Gi", "100Gi"}))
	}
	if g.chance(0.5) {
		alloc[GPU] = resource.MustParse(pick(g, []string{"0", "1", "2", "4", "8"}))
	}
	if g.chance(0.3) {
		alloc[MIG1g] = resource.MustParse(strconv.Itoa(g.n(8)))
		alloc[MIG3g] = resource.MustParse(strconv.Itoa(g.n(3)))
	}

	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-uid-" + name), Labels: l},
		Status:     v1.NodeStatus{Capacity: alloc.DeepCopy(), Allocatable: alloc},
	}
	taints := 0
	if x := g.r.Float64(); x > 0.95 {
		taints = 2
	} else if x > 0.8 {
		taints = 1
	}
	for _, j := range g.r.Perm(len(taintPool))[:taints] {
		n.Spec.Taints = append(n.Spec.Taints, taintPool[j])
	}
	if g.chance(0.08) {
		n.Spec.Unschedulable = true
		// The node lifecycle controller normally adds the matching taint;
		// leave it off sometimes so both checks are exercised on their own.
		if g.chance(0.6) {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule})
		}
	}
	return n
}
