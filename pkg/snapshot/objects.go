package snapshot

import (
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// NodeGroup is a set of nodes that can be grown or shrunk together (an Auto
// Scaling group, a managed instance group, a kwok group).
type NodeGroup struct {
	ID         string
	MinSize    int
	MaxSize    int
	TargetSize int
	// Template is what a new node of the group looks like; it may be nil for
	// groups that are never scaled up from the snapshot.
	Template *v1.Node
	// InstanceType is the machine type of the group's nodes.
	InstanceType string
	// PricePerHour is the cost of one node of the group, in dollars.
	PricePerHour float64
	// Spot marks groups of interruptible (spot, preemptible) capacity.
	Spot bool
	// Instances are the machines the cloud holds for the group, registered
	// as nodes or not, when the provider can list them (InstancesListed);
	// the autoscaler finds instances that never join through them.
	Instances       []Instance
	InstancesListed bool
	// Options override cluster-wide options for this group (thresholds,
	// unneeded and unready times, provisioning time); nil keeps them all.
	Options *GroupOptions
	// TemplateSlices are the ResourceSlices a new node of the group
	// publishes once its DRA drivers run (scale from zero with DRA). Each
	// is node-local with spec.nodeName the template node's name; pools
	// are renamed per node when nodes are made from the template.
	TemplateSlices []*resourceapi.ResourceSlice
	// Queued are the group's requests for queued capacity as the cloud
	// last listed them (groups with the QueuedProvisioning option).
	Queued []QueuedRequest
}

// QueuedRequest is one request for queued capacity: a whole count of
// nodes that the cloud adds all at once when it has them (GKE's resize
// requests of a flex-start node pool).
type QueuedRequest struct {
	// Name is the request's name in the cloud; gpuscale names the ones it
	// makes after the ProvisioningRequest they serve.
	Name  string
	Count int
	State QueuedState
	// Message is the cloud's word on a failed request.
	Message string
}

// QueuedState is where a queued request stands.
type QueuedState string

// Queued request states.
const (
	// QueuedWaiting: accepted, waiting for capacity.
	QueuedWaiting QueuedState = "Waiting"
	// QueuedProvisioned: the nodes were added to the group.
	QueuedProvisioned QueuedState = "Provisioned"
	// QueuedFailed: failed or cancelled; no node was added.
	QueuedFailed QueuedState = "Failed"
)

// Instance is one machine of a node group as the cloud sees it.
type Instance struct {
	// ProviderID is the Node.Spec.ProviderID the instance registers with.
	ProviderID string
	State      InstanceState
	// CreatedAt is when the cloud created the instance; zero when the
	// provider cannot tell.
	CreatedAt time.Time
}

// InstanceState is an instance's life-cycle state.
type InstanceState uint8

// Instance states.
const (
	InstanceRunning InstanceState = iota
	InstanceCreating
	InstanceDeleting
)

func (g *NodeGroup) validate() error {
	switch {
	case g.ID == "":
		return fmt.Errorf("node group: id: must not be empty")
	case g.MinSize < 0:
		return fmt.Errorf("node group %s: minSize: must not be negative, got %d", g.ID, g.MinSize)
	case g.MaxSize < g.MinSize:
		return fmt.Errorf("node group %s: maxSize: %d is below minSize %d", g.ID, g.MaxSize, g.MinSize)
	case g.TargetSize < 0:
		return fmt.Errorf("node group %s: targetSize: must not be negative, got %d", g.ID, g.TargetSize)
	case g.PricePerHour < 0:
		return fmt.Errorf("node group %s: pricePerHour: must not be negative, got %g", g.ID, g.PricePerHour)
	}
	if err := g.Options.Validate(); err != nil {
		return fmt.Errorf("node group %s: options: %w", g.ID, err)
	}
	if g.Template != nil {
		if err := validateNode(g.Template); err != nil {
			return fmt.Errorf("node group %s: template: %w", g.ID, err)
		}
	}
	for i, sl := range g.TemplateSlices {
		if err := validateTemplateSlice(sl, g.Template); err != nil {
			return fmt.Errorf("node group %s: templateSlices[%d]: %w", g.ID, i, err)
		}
	}
	return nil
}

func validateTemplateSlice(sl *resourceapi.ResourceSlice, template *v1.Node) error {
	switch {
	case sl == nil:
		return fmt.Errorf("is nil")
	case template == nil:
		return fmt.Errorf("the group has no template node")
	case sl.Spec.NodeName == nil || *sl.Spec.NodeName != template.Name:
		return fmt.Errorf("spec.nodeName: must name the template node %q", template.Name)
	}
	return validateSlice(sl)
}

// SetNodeGroup adds a node group or replaces the one with the same id.
func (s *Snapshot) SetNodeGroup(g NodeGroup) error {
	if err := g.validate(); err != nil {
		return err
	}
	setObject(s, s.groups, g.ID, &g)
	return nil
}

// NodeGroup returns the group with the given id, or nil.
func (s *Snapshot) NodeGroup(id string) *NodeGroup { return s.groups[id] }

// NodeGroups returns every group sorted by id.
func (s *Snapshot) NodeGroups() []*NodeGroup {
	out := make([]*NodeGroup, 0, len(s.groups))
	for _, g := range s.groups {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// NodesInGroup returns the nodes of one group sorted by name.
func (s *Snapshot) NodesInGroup(id string) []*NodeInfo {
	var out []*NodeInfo
	for _, ni := range s.sorted {
		if ni.Group == id {
			out = append(out, ni)
		}
	}
	return out
}

// SetNamespace adds or replaces a namespace; pod affinity namespace
// selectors match on its labels.
func (s *Snapshot) SetNamespace(ns *v1.Namespace) error {
	if ns == nil || ns.Name == "" {
		return fmt.Errorf("namespace: metadata.name: must not be empty")
	}
	setObject(s, s.namespaces, ns.Name, ns)
	return nil
}

// Namespace returns a namespace by name, or nil.
func (s *Snapshot) Namespace(name string) *v1.Namespace { return s.namespaces[name] }

// NamespaceLabels returns the labels of a namespace, nil when it is unknown.
func (s *Snapshot) NamespaceLabels(name string) labels.Set {
	if ns := s.namespaces[name]; ns != nil {
		return ns.Labels
	}
	return nil
}

// Namespaces returns every namespace sorted by name.
func (s *Snapshot) Namespaces() []*v1.Namespace {
	out := make([]*v1.Namespace, 0, len(s.namespaces))
	for _, ns := range s.namespaces {
		out = append(out, ns)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SetPersistentVolume adds or replaces a PersistentVolume.
func (s *Snapshot) SetPersistentVolume(pv *v1.PersistentVolume) error {
	if pv == nil || pv.Name == "" {
		return fmt.Errorf("persistent volume: metadata.name: must not be empty")
	}
	setObject(s, s.pvs, pv.Name, pv)
	return nil
}

// PersistentVolume returns a PersistentVolume by name, or nil.
func (s *Snapshot) PersistentVolume(name string) *v1.PersistentVolume { return s.pvs[name] }

// SetPersistentVolumeClaim adds or replaces a PersistentVolumeClaim.
func (s *Snapshot) SetPersistentVolumeClaim(pvc *v1.PersistentVolumeClaim) error {
	if pvc == nil || pvc.Name == "" {
		return fmt.Errorf("persistent volume claim: metadata.name: must not be empty")
	}
	setObject(s, s.pvcs, pvc.Namespace+"/"+pvc.Name, pvc)
	return nil
}

// PersistentVolumeClaim returns a claim by namespace and name, or nil.
func (s *Snapshot) PersistentVolumeClaim(namespace, name string) *v1.PersistentVolumeClaim {
	return s.pvcs[namespace+"/"+name]
}

// SetStorageClass adds or replaces a StorageClass.
func (s *Snapshot) SetStorageClass(sc *storagev1.StorageClass) error {
	if sc == nil || sc.Name == "" {
		return fmt.Errorf("storage class: metadata.name: must not be empty")
	}
	setObject(s, s.classes, sc.Name, sc)
	return nil
}

// StorageClass returns a StorageClass by name, or nil.
func (s *Snapshot) StorageClass(name string) *storagev1.StorageClass { return s.classes[name] }

// setObject stores v under k and records how to put back what was there.
func setObject[V any](s *Snapshot, m map[string]*V, k string, v *V) {
	old, had := m[k]
	m[k] = v
	s.changed(change{kind: changeObject, restore: func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	}})
}
