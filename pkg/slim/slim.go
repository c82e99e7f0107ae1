// Package slim trims and shares the API objects an informer caches: what
// the autoscaler never reads is dropped, and what the pods of one workload
// repeat is held once.
package slim

import (
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
)

// LastApplied is kubectl's copy of the applied object: often the largest
// annotation, and never read by the autoscaler.
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// MaxShared bounds each table of shared values; a full table starts over,
// so a cluster whose labels churn (a rollout's pod-template-hash) cannot
// grow it without end. Sharing past a restart of the table still holds
// for the objects transformed before it.
const MaxShared = 1 << 16

// Transformer is an informer transform (Transform). It drops from every object what
// the autoscaler never reads and what is often most of its size: the
// managed fields, kubectl's last-applied configuration and a node's list
// of cached images (up to 50 names and sizes a node). Other annotations
// stay: drain rules and options read them.
//
// It also shares what the pods of one workload repeat: a pod's labels and
// each container's requests and limits are replaced by one map per
// distinct value, and the namespace, owners, scheduler, service account,
// priority class and container names and images by one string per
// distinct value. A million pods from a few thousand templates then hold a
// few thousand such maps instead of millions, which is less heap and less
// for the collector to mark. Objects in an informer's cache are read-only
// (the whole client-go contract), so a map shared among them is never
// written; a copy made to change one (DeepCopy) gets maps of its own.
type Transformer struct {
	mu        sync.Mutex
	resources map[string]v1.ResourceList
	labels    map[string]map[string]string
	strs      map[string]string
}

// New returns a Transformer with empty tables; one serves every informer
// of a process (it is safe for concurrent use).
func New() *Transformer { return &Transformer{} }

func (s *Transformer) Transform(obj any) (any, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil // a tombstone or a type without metadata: kept as it is
	}
	m.SetManagedFields(nil)
	if a := m.GetAnnotations(); a != nil {
		if _, ok := a[LastApplied]; ok {
			// A new map: the object's own may be shared with the decoder's caller.
			kept := make(map[string]string, len(a)-1)
			for k, v := range a {
				if k != LastApplied {
					kept[k] = v
				}
			}
			m.SetAnnotations(kept)
		}
	}
	switch o := obj.(type) {
	case *v1.Pod:
		s.sharePod(o)
	case *v1.Node:
		o.Status.Images = nil
	}
	return obj, nil
}

func (s *Transformer) sharePod(p *v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.Namespace = s.str(p.Namespace)
	p.GenerateName = s.str(p.GenerateName)
	p.Labels = s.labelSet(p.Labels)
	for i := range p.OwnerReferences {
		r := &p.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name = s.str(r.APIVersion), s.str(r.Kind), s.str(r.Name)
	}
	p.Spec.SchedulerName = s.str(p.Spec.SchedulerName)
	p.Spec.ServiceAccountName = s.str(p.Spec.ServiceAccountName)
	p.Spec.DeprecatedServiceAccount = s.str(p.Spec.DeprecatedServiceAccount)
	p.Spec.PriorityClassName = s.str(p.Spec.PriorityClassName)
	for _, cs := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			c.Name, c.Image = s.str(c.Name), s.str(c.Image)
			c.Resources.Requests = s.resourceList(c.Resources.Requests)
			c.Resources.Limits = s.resourceList(c.Resources.Limits)
		}
	}
}

// str is the shared copy of v.
func (s *Transformer) str(v string) string {
	if v == "" {
		return ""
	}
	return share(&s.strs, v, v)
}

// labelSet is the shared map equal to l.
func (s *Transformer) labelSet(l map[string]string) map[string]string {
	if len(l) == 0 {
		return l
	}
	return share(&s.labels, keyOf(l, func(v string) string { return v }), l)
}

// resourceList is the shared list equal to r: the same names with equal
// quantities (compared in their canonical form, so "1000m" shares with
// "1").
func (s *Transformer) resourceList(r v1.ResourceList) v1.ResourceList {
	if len(r) == 0 {
		return r
	}
	return share(&s.resources, keyOf(r, func(q resource.Quantity) string { return q.String() }), r)
}

// share returns the value table holds for key, first storing v there when
// it holds none. A full table (MaxShared) starts over.
func share[V any](table *map[string]V, key string, v V) V {
	if shared, ok := (*table)[key]; ok {
		return shared
	}
	if len(*table) >= MaxShared || *table == nil {
		*table = make(map[string]V)
	}
	(*table)[key] = v
	return v
}

// keyOf writes m's entries in key order, each value as text says, NUL
// after each key and value: label keys and values and resource names
// cannot hold a NUL, so equal keys mean equal maps.
func keyOf[K ~string, V any](m map[K]V, text func(V) string) string {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(string(k))
		b.WriteByte(0)
		b.WriteString(text(m[k]))
		b.WriteByte(0)
	}
	return b.String()
}
