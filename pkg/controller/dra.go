package controller

import (
	"cmp"
	"fmt"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
)

// draResources are the resource.k8s.io/v1 resources the loop reads: the
// DeviceClasses claims select from, the claims and their templates, and the
// ResourceSlices the DRA drivers publish for the nodes.
var draResources = []string{"deviceclasses", "resourceclaims", "resourceclaimtemplates", "resourceslices"}

// servesDRA reports whether the API server serves every resource of
// resource.k8s.io/v1 the loop reads. A cluster without Dynamic Resource
// Allocation (before Kubernetes 1.34, or with the API group turned off)
// answers NotFound; any other failure is an error, since running on
// without the claims would give pods that claim GPUs CPU nodes.
func servesDRA(d discovery.DiscoveryInterface) (bool, error) {
	gv := resourceapi.SchemeGroupVersion.String()
	list, err := d.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", gv, err)
	}
	for _, want := range draResources {
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == want }) {
			return false, nil
		}
	}
	return true, nil
}

// draListers are the caches of the resource.k8s.io/v1 objects.
type draListers struct {
	classes   resourcelisters.DeviceClassLister
	claims    resourcelisters.ResourceClaimLister
	templates resourcelisters.ResourceClaimTemplateLister
	slices    resourcelisters.ResourceSliceLister
}

// newDRAListers registers the resource.k8s.io/v1 informers.
func newDRAListers(f informers.SharedInformerFactory) (*draListers, []namedInformer) {
	r := f.Resource().V1()
	l := &draListers{
		classes:   r.DeviceClasses().Lister(),
		claims:    r.ResourceClaims().Lister(),
		templates: r.ResourceClaimTemplates().Lister(),
		slices:    r.ResourceSlices().Lister(),
	}
	return l, []namedInformer{
		{"deviceclasses", r.DeviceClasses().Informer()}, {"resourceclaims", r.ResourceClaims().Informer()},
		{"resourceclaimtemplates", r.ResourceClaimTemplates().Informer()}, {"resourceslices", r.ResourceSlices().Informer()},
	}
}

// objectKey is a namespaced name ("" namespace for cluster objects).
type objectKey struct{ namespace, name string }

// draKeys are the DRA objects the mirror put in the snapshot, so that those
// the caches no longer hold are removed.
type draKeys struct {
	classes, templates, claims, slices map[objectKey]bool
}

// syncDRADevices sets the DeviceClasses, ResourceClaimTemplates and
// ResourceSlices. An object is set only when the cache holds another
// pointer than the snapshot: informers replace what changed.
func (m *mirror) syncDRADevices(l *draListers) error {
	classes, err := l.classes.List(labels.Everything())
	if err != nil {
		return err
	}
	m.dra.classes = mirrorObjects(m.dra.classes, classes,
		func(k objectKey) *resourceapi.DeviceClass { return m.snap.DeviceClass(k.name) },
		m.snap.SetDeviceClass, func(k objectKey) { m.snap.RemoveDeviceClass(k.name) })
	templates, err := l.templates.List(labels.Everything())
	if err != nil {
		return err
	}
	m.dra.templates = mirrorObjects(m.dra.templates, templates,
		func(k objectKey) *resourceapi.ResourceClaimTemplate {
			return m.snap.ResourceClaimTemplate(k.namespace, k.name)
		},
		m.snap.SetResourceClaimTemplate, func(k objectKey) { m.snap.RemoveResourceClaimTemplate(k.namespace, k.name) })
	sls, err := l.slices.List(labels.Everything())
	if err != nil {
		return err
	}
	m.dra.slices = mirrorObjects(m.dra.slices, sls,
		func(k objectKey) *resourceapi.ResourceSlice { return m.snap.ResourceSlice(k.name) },
		m.snap.SetResourceSlice, func(k objectKey) { _ = m.snap.RemoveResourceSlice(k.name) })
	return nil
}

// syncDRAClaims sets the ResourceClaims as the API server has them. It runs
// after the pods: binding or removing a pod reserves or releases its claims
// in the snapshot (a copy of the claim), and the API server's version, with
// the allocation and reservations the scheduler and the resource claim
// controller wrote, is what holds.
func (m *mirror) syncDRAClaims(l *draListers) error {
	claims, err := l.claims.List(labels.Everything())
	if err != nil {
		return err
	}
	m.dra.claims = mirrorObjects(m.dra.claims, claims,
		func(k objectKey) *resourceapi.ResourceClaim { return m.snap.ResourceClaim(k.namespace, k.name) },
		m.snap.SetResourceClaim, func(k objectKey) { _ = m.snap.RemoveResourceClaim(k.namespace, k.name) })
	return nil
}

// keyed is an API object pointer.
type keyed interface {
	comparable
	GetNamespace() string
	GetName() string
}

// mirrorObjects sets each object the snapshot does not hold as it is
// (current returns the snapshot's), removes the objects of had not listed
// any more, and returns the keys now mirrored. An object the snapshot
// refuses is left out (and removed if an older version was in), to be
// tried again next loop.
func mirrorObjects[T keyed](had map[objectKey]bool, objs []T, current func(objectKey) T, set func(T) error,
	remove func(objectKey)) map[objectKey]bool {
	var zero T
	seen := make(map[objectKey]bool, len(objs))
	for _, o := range objs {
		k := objectKey{o.GetNamespace(), o.GetName()}
		if current(k) == o {
			seen[k] = true
			continue
		}
		if err := set(o); err != nil {
			if current(k) != zero {
				remove(k)
			}
			continue
		}
		seen[k] = true
	}
	var gone []objectKey
	for k := range had {
		if !seen[k] {
			gone = append(gone, k)
		}
	}
	slices.SortFunc(gone, func(a, b objectKey) int {
		if c := cmp.Compare(a.namespace, b.namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	for _, k := range gone {
		if current(k) != zero {
			remove(k)
		}
	}
	return seen
}
