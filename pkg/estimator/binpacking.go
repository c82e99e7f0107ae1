package estimator

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/dra"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Options bound an estimate.
type Options struct {
	// MaxNodes is the most new nodes the estimate may add; 0 adds none.
	MaxNodes int
	// LimitName names what set MaxNodes, for reasons ("max size", "max-nodes-total").
	LimitName string
}

// Estimate is the outcome of packing pending pods onto new template nodes.
type Estimate struct {
	NodeCount int
	// Placed[i] is how many pods of class i the new nodes take.
	Placed   []int
	PodCount int
	// Requested sums the requests of the placed pods (DaemonSet pods excluded).
	Requested snapshot.Resource
	// Reasons[i] says why class i does not fit an empty template node at
	// all; the zero Result when it does.
	Reasons []predicates.Result
	// LimitReached is set when pods were left over because MaxNodes ran out.
	LimitReached bool
	// DeviceUnitsOffered is what one new node offers as DRA accelerator
	// devices, DeviceUnitsTaken what the placed pods' claims hold of the
	// new nodes' devices, in whole-device equivalents (dra.Usage).
	DeviceUnitsOffered, DeviceUnitsTaken float64
	// OnExisting counts the placed pods that went to existing nodes (see
	// Pack); they are in Placed and PodCount, not in Requested.
	OnExisting int
}

// Pack estimates how many nodes of template t the classes need. Each class
// is a slice of interchangeable pods; classes are placed largest first,
// each pod on the first new node it fits, a new node opened when none does.
// The template's group must be in s. s is forked and reverted: it is
// unchanged afterwards (its generation moves on).
//
// A pod spread over hostnames (a DoNotSchedule topology spread constraint
// on kubernetes.io/hostname) that fits no new node is tried on the existing
// nodes before a node is opened for it, as the upstream estimator does:
// every existing node is a domain, and while it holds no matching pod the
// skew lets each new node take one pod only. Placing pods there too, as
// kube-scheduler will once the new nodes raise the minimum, keeps the
// estimate from opening a node per pod.
func Pack(s *snapshot.Snapshot, t *Template, classes [][]*snapshot.PodInfo, opts Options) (Estimate, error) {
	est := Estimate{Placed: make([]int, len(classes)), Reasons: make([]predicates.Result, len(classes))}
	s.Fork()
	defer func() { _ = s.Revert() }()

	checker := predicates.New(s)
	checks := make([]*predicates.PodCheck, len(classes))
	if err := probe(s, t, classes, checker, checks, est.Reasons); err != nil {
		return est, err
	}
	var nodes []*snapshot.NodeInfo
	// existing are the snapshot's own nodes, for pods spread over hostnames.
	var existing []*snapshot.NodeInfo
	for _, c := range classes {
		if spreadsOverHostnames(c[0].Pod) {
			existing = append(existing, s.Nodes()...)
			break
		}
	}
	// Nodes before firstOpen cannot take even the smallest pod of any class;
	// skipping them keeps packing linear when every class differs.
	smallest, firstOpen := smallestRequests(classes), 0
	for _, ci := range largestFirst(classes, t.Group.Template) {
		if !est.Reasons[ci].Fits() {
			continue
		}
		pc, cursor := checks[ci], 0
		monotonic := IsMonotonic(classes[ci][0])
		hostnameSpread := spreadsOverHostnames(classes[ci][0].Pod)
		for _, pi := range classes[ci] {
			placed := false
			for firstOpen < len(nodes) && full(nodes[firstOpen], &smallest) {
				firstOpen++
			}
			start := firstOpen
			if monotonic {
				start = max(cursor, firstOpen) // earlier nodes refused this class and can only fill up
			}
			for i := start; i < len(nodes); i++ {
				if pc.Check(nodes[i]).Fits() {
					if err := pc.Place(pi, nodes[i]); err != nil {
						return est, err
					}
					placed, cursor = true, i
					break
				}
			}
			if !placed && hostnameSpread {
				if ni := firstFit(pc, existing); ni != nil {
					if err := pc.Place(pi, ni); err != nil { // with its claims' devices
						return est, err
					}
					est.Placed[ci]++
					est.PodCount++
					est.OnExisting++
					continue
				}
			}
			if !placed {
				if len(nodes) >= opts.MaxNodes {
					est.LimitReached = true
					break
				}
				ni, err := t.AddNode(s, newNodeName(t.Group.ID, len(nodes)))
				if err != nil {
					return est, err
				}
				nodes = append(nodes, ni)
				if !pc.Check(ni).Fits() {
					// Fits an empty node in isolation but not here (spread or
					// affinity with the pods just placed): stop this class.
					break
				}
				if err := pc.Place(pi, ni); err != nil {
					return est, err
				}
				cursor = len(nodes) - 1
			}
			est.Placed[ci]++
			est.PodCount++
			est.Requested.AddResource(&pi.Requests, 1)
		}
	}
	est.NodeCount = countUsed(nodes, len(t.daemonPods))
	if len(t.Group.TemplateSlices) > 0 {
		est.DeviceUnitsOffered = dra.TemplateUsage(t.Group.TemplateSlices).Offered
		for _, ni := range nodes[:est.NodeCount] {
			est.DeviceUnitsTaken += dra.NodeUsage(s, ni.Name()).Used
		}
	}
	return est, nil
}

// spreadsOverHostnames: the pod has a DoNotSchedule topology spread
// constraint on kubernetes.io/hostname.
func spreadsOverHostnames(pod *v1.Pod) bool {
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.TopologyKey == v1.LabelHostname && c.WhenUnsatisfiable == v1.DoNotSchedule {
			return true
		}
	}
	return false
}

// firstFit is the first of nodes the pod fits, or nil.
func firstFit(pc *predicates.PodCheck, nodes []*snapshot.NodeInfo) *snapshot.NodeInfo {
	for _, ni := range nodes {
		if pc.Check(ni).Fits() {
			return ni
		}
	}
	return nil
}

// smallestRequests is the least cpu and memory any class asks for.
func smallestRequests(classes [][]*snapshot.PodInfo) snapshot.Resource {
	var r snapshot.Resource
	for i, c := range classes {
		q := &c[0].Requests
		if i == 0 || q.MilliCPU < r.MilliCPU {
			r.MilliCPU = q.MilliCPU
		}
		if i == 0 || q.Memory < r.Memory {
			r.Memory = q.Memory
		}
	}
	return r
}

// full reports whether no pod of any class can fit on ni any more: no pod
// slot left, or less cpu or memory free than the smallest request.
func full(ni *snapshot.NodeInfo, smallest *snapshot.Resource) bool {
	return int64(len(ni.Pods)) >= ni.Allocatable.AllowedPods ||
		(smallest.MilliCPU > 0 && ni.Free(v1.ResourceCPU) < smallest.MilliCPU) ||
		(smallest.Memory > 0 && ni.Free(v1.ResourceMemory) < smallest.Memory)
}

// probe checks each class's representative against an empty template node
// and keeps the PodCheck for packing.
func probe(s *snapshot.Snapshot, t *Template, classes [][]*snapshot.PodInfo, c *predicates.Checker,
	checks []*predicates.PodCheck, reasons []predicates.Result) error {
	s.Fork()
	ni, err := t.AddNode(s, newNodeName(t.Group.ID, -1))
	if err != nil {
		_ = s.Revert()
		return err
	}
	for i, class := range classes {
		checks[i] = c.PreparePodInfo(class[0])
		reasons[i] = checks[i].Check(ni)
	}
	return s.Revert()
}

// countUsed drops trailing nodes that hold only DaemonSet pods: a class can
// open a node and then find it does not fit there after all.
func countUsed(nodes []*snapshot.NodeInfo, daemonPods int) int {
	n := len(nodes)
	for n > 0 && len(nodes[n-1].Pods) == daemonPods {
		n--
	}
	return n
}

func newNodeName(group string, i int) string {
	if i < 0 {
		return "template-" + group
	}
	return fmt.Sprintf("template-%s-%d", group, i)
}

// IsMonotonic: a node that refused a pod of this class keeps refusing the
// next pods of the class, so packing may resume where the last pod went.
// Required pod affinity and topology spread break that: placing pods can
// open domains that refused before.
func IsMonotonic(pi *snapshot.PodInfo) bool {
	if len(pi.RequiredAffinityTerms) > 0 {
		return false
	}
	for _, c := range pi.Pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == v1.DoNotSchedule {
			return false
		}
	}
	return true
}

// largestFirst orders classes by their largest share of the template's
// allocatable, biggest first (first-fit decreasing), ties by input order.
func largestFirst(classes [][]*snapshot.PodInfo, template *v1.Node) []int {
	alloc := snapshot.ResourceFromList(template.Status.Allocatable)
	scale := gpu.ScaleOf(template)
	offered := scale.Offered(alloc.Scalar)
	size := make([]float64, len(classes))
	order := make([]int, len(classes))
	for i, c := range classes {
		order[i] = i
		r := &c[0].Requests
		size[i] = maxShare(share(r.MilliCPU, alloc.MilliCPU), share(r.Memory, alloc.Memory))
		if offered > 0 && len(r.Scalar) > 0 {
			size[i] = max(size[i], scale.Units(r.Scalar)/offered)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return size[order[a]] > size[order[b]] })
	return order
}

func share(req, alloc int64) float64 {
	if alloc <= 0 {
		return 0
	}
	return float64(req) / float64(alloc)
}

func maxShare(xs ...float64) float64 {
	m := 0.0
	for _, x := range xs {
		if x > m {
			m = x
		}
	}
	return m
}
