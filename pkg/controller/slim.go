package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
)

// lastApplied is kubectl's copy of the applied object: often the largest
// annotation, and never read here.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// slim is the informers' transform. It drops from every object what the
// autoscaler never reads and what is often most of its size, the managed
// fields and kubectl's last-applied configuration, so that the caches of
// a cluster of a million pods hold only what the loop uses. Other
// annotations stay: drain rules and options read them.
func slim(obj any) (any, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil // a tombstone or a type without metadata: kept as it is
	}
	m.SetManagedFields(nil)
	if a := m.GetAnnotations(); a != nil {
		if _, ok := a[lastApplied]; ok {
			// A new map: the object's own may be shared with the decoder's caller.
			kept := make(map[string]string, len(a)-1)
			for k, v := range a {
				if k != lastApplied {
					kept[k] = v
				}
			}
			m.SetAnnotations(kept)
		}
	}
	return obj, nil
}
