// Package estimator answers "how many new nodes of this template would the
// pending pods need?" by bin-packing them onto simulated nodes in a forked
// snapshot (first-fit decreasing).
package estimator

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/dra"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Template makes the nodes a group would add: the group's template node
// plus the DaemonSet pods that would run on each, which take their share
// of every new node.
type Template struct {
	Group      *snapshot.NodeGroup
	daemonPods []*snapshot.PodInfo
}

// NewTemplate prepares a group's template. DaemonSets whose pods would
// schedule on an empty template node (taints, node affinity, resources)
// are counted as overhead.
func NewTemplate(g *snapshot.NodeGroup, daemonSets []*appsv1.DaemonSet) (*Template, error) {
	if g.Template == nil {
		return nil, fmt.Errorf("node group %s: has no template node", g.ID)
	}
	t := &Template{Group: g}
	probe := snapshot.New()
	if err := probe.AddNode(g.Template); err != nil {
		return nil, fmt.Errorf("node group %s: template: %w", g.ID, err)
	}
	checker := predicates.New(probe)
	for _, ds := range daemonSets {
		pod := &v1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
		pod.Namespace, pod.Name = ds.Namespace, ds.Name
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptrTrue()}}
		pc, err := checker.Prepare(pod)
		if err != nil {
			return nil, fmt.Errorf("daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
		}
		if pc.Check(probe.Node(g.Template.Name)).Fits() {
			t.daemonPods = append(t.daemonPods, pc.PodInfo())
		}
	}
	return t, nil
}

// addSiblingCSINode gives a new node the CSI attach limits of a registered
// node of its group (a copy of its CSINode), since a template node has no
// CSINode of its own; without a sibling the new node has no limits.
func addSiblingCSINode(s *snapshot.Snapshot, group, name string) error {
	sibling := s.GroupCSINode(group, name)
	if sibling == nil {
		return nil
	}
	cn := sibling.DeepCopy()
	cn.Name, cn.UID, cn.ResourceVersion, cn.OwnerReferences = name, "", "", nil
	for i := range cn.Spec.Drivers {
		cn.Spec.Drivers[i].NodeID = name
	}
	return s.SetCSINode(cn)
}

func ptrTrue() *bool { b := true; return &b }

// DaemonPods are the DaemonSet pods counted on every new node.
func (t *Template) DaemonPods() []*snapshot.PodInfo { return t.daemonPods }

// AddNode adds one new node named name, with its DaemonSet pods, the
// ResourceSlices its DRA drivers will publish and the CSINode its CSI
// drivers will register, to s.
func (t *Template) AddNode(s *snapshot.Snapshot, name string) (*snapshot.NodeInfo, error) {
	node := t.Group.Template.DeepCopy()
	node.Name = name
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels[v1.LabelHostname] = name
	if err := s.AddNodeInGroup(node, t.Group.ID); err != nil {
		return nil, err
	}
	if len(t.Group.TemplateSlices) > 0 {
		if err := dra.AddForNode(s, t.Group.TemplateSlices, t.Group.Template.Name, name); err != nil {
			return nil, fmt.Errorf("node group %s: template slices: %w", t.Group.ID, err)
		}
	}
	if err := addSiblingCSINode(s, t.Group.ID, name); err != nil {
		return nil, fmt.Errorf("node group %s: %w", t.Group.ID, err)
	}
	for _, dp := range t.daemonPods {
		pi := *dp
		pod := *dp.Pod
		pod.Name = dp.Pod.Name + "-" + name
		pod.Spec.NodeName = name
		pi.Pod = &pod
		if err := s.AddPodInfo(&pi, name); err != nil {
			return nil, err
		}
	}
	return s.Node(name), nil
}
