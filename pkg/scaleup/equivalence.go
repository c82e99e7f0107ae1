package scaleup

import (
	"hash/fnv"
	"maps"
	"reflect"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Class is a set of pending pods that are interchangeable for scheduling:
// same namespace, labels, requests and scheduling constraints. The planner
// simulates one representative per class and counts, so 50,000 replicas cost
// about as much as one. Pods of different owners with the same spec share a
// class too: the scheduler cannot tell them apart either.
type Class struct {
	// Pods are the members in input order; Pods[0] is the representative.
	Pods []*snapshot.PodInfo
}

// Rep is the representative pod.
func (c *Class) Rep() *snapshot.PodInfo { return c.Pods[0] }

// groupClasses sorts pods into classes, keeping first-seen order. Members
// share the representative's computed requests, ports and terms, which are
// equal by construction.
func groupClasses(pods []*v1.Pod) ([]*Class, error) {
	buckets := make(map[uint64][]*Class, 16)
	var classes []*Class
	for _, pod := range pods {
		sig := signature(pod)
		var found *Class
		for _, c := range buckets[sig] {
			if equivalent(c.Rep().Pod, pod) {
				found = c
				break
			}
		}
		if found != nil {
			pi := *found.Rep()
			pi.Pod = pod
			found.Pods = append(found.Pods, &pi)
			continue
		}
		pi, err := snapshot.NewPodInfo(pod)
		if err != nil {
			return nil, err
		}
		c := &Class{Pods: []*snapshot.PodInfo{pi}}
		buckets[sig] = append(buckets[sig], c)
		classes = append(classes, c)
	}
	return classes, nil
}

// signature hashes the cheap-to-read parts of what makes pods equivalent.
// Map entries are combined order-independently; collisions are resolved by
// equivalent.
func signature(p *v1.Pod) uint64 {
	h := fnv.New64a()
	write := func(s string) { _, _ = h.Write([]byte(s)); _, _ = h.Write([]byte{0}) }
	write(p.Namespace)
	write(p.Spec.NodeName)
	sum := h.Sum64()
	sum ^= mapHash(p.Labels, 1) ^ mapHash(p.Spec.NodeSelector, 2)
	for i := range p.Spec.Containers {
		sum ^= resourceHash(p.Spec.Containers[i].Resources.Requests, uint64(i)+3)
	}
	for i := range p.Spec.InitContainers {
		sum ^= resourceHash(p.Spec.InitContainers[i].Resources.Requests, uint64(i)+101)
	}
	return sum
}

func mapHash(m map[string]string, salt uint64) uint64 {
	var sum uint64
	for k, v := range m {
		h := fnv.New64a()
		_, _ = h.Write([]byte(k))
		_, _ = h.Write([]byte{'='})
		_, _ = h.Write([]byte(v))
		sum += h.Sum64() * (salt*2 + 1)
	}
	return sum
}

func resourceHash(rl v1.ResourceList, salt uint64) uint64 {
	var sum uint64
	for name, q := range rl {
		h := fnv.New64a()
		_, _ = h.Write([]byte(name))
		sum += (h.Sum64() ^ uint64(q.MilliValue())) * (salt*2 + 1)
	}
	return sum
}

// equivalent compares everything the scheduling checks read.
func equivalent(a, b *v1.Pod) bool {
	if a.Namespace != b.Namespace || a.Spec.NodeName != b.Spec.NodeName ||
		!maps.Equal(a.Labels, b.Labels) || !maps.Equal(a.Spec.NodeSelector, b.Spec.NodeSelector) ||
		priority(a) != priority(b) {
		return false
	}
	if !sameContainers(a.Spec.Containers, b.Spec.Containers) || !sameContainers(a.Spec.InitContainers, b.Spec.InitContainers) {
		return false
	}
	return reflect.DeepEqual(a.Spec.Affinity, b.Spec.Affinity) &&
		reflect.DeepEqual(a.Spec.Tolerations, b.Spec.Tolerations) &&
		reflect.DeepEqual(a.Spec.TopologySpreadConstraints, b.Spec.TopologySpreadConstraints) &&
		sameQuantities(a.Spec.Overhead, b.Spec.Overhead) &&
		reflect.DeepEqual(a.Spec.Resources, b.Spec.Resources) &&
		sameClaims(a.Spec.Volumes, b.Spec.Volumes)
}

func sameContainers(a, b []v1.Container) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameQuantities(a[i].Resources.Requests, b[i].Resources.Requests) ||
			!sameQuantities(a[i].Resources.Limits, b[i].Resources.Limits) ||
			!slices.Equal(a[i].Ports, b[i].Ports) ||
			!reflect.DeepEqual(a[i].RestartPolicy, b[i].RestartPolicy) {
			return false
		}
	}
	return true
}

// sameQuantities compares resource lists by value ("1" equals "1000m"),
// without reflection: it runs once per pending pod.
func sameQuantities(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		r, ok := b[name]
		if !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}

func sameClaims(a, b []v1.Volume) bool {
	claims := func(vs []v1.Volume) []string {
		var out []string
		for _, v := range vs {
			if v.PersistentVolumeClaim != nil {
				out = append(out, v.PersistentVolumeClaim.ClaimName)
			}
		}
		return out
	}
	return slices.Equal(claims(a), claims(b))
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}
