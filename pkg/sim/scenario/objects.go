package scenario

import (
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// LabelNodeGroup names the node group of a simulated node.
const LabelNodeGroup = "gpuscale.dev/node-group"

// Spec is the pod spec every pod of the workload gets: one container with
// the requests, and the template's scheduling constraints.
func (t PodTemplate) Spec() v1.PodSpec {
	spec := v1.PodSpec{
		Containers:   []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Requests: t.Requests.DeepCopy()}}},
		NodeSelector: t.NodeSelector, Tolerations: t.Tolerations, Priority: t.Priority, SchedulerName: t.SchedulerName,
		Volumes: t.Volumes,
	}
	if t.NodeAffinity != nil {
		spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: t.NodeAffinity}}
	}
	return spec
}

// TemplateNode is the node every node of the group is made from.
func (g *NodeGroup) TemplateNode() *v1.Node {
	labels := map[string]string{LabelNodeGroup: g.Name}
	maps.Copy(labels, g.Labels)
	return cloudprovider.TemplateNode(cloudprovider.TemplateSpec{
		Group: g.Name, Capacity: g.Capacity, Labels: labels, Taints: g.Taints,
		InstanceType: g.InstanceType, Zone: g.Zone,
	})
}

// checkObjects builds a node of each group and a pod of each workload as
// the engine will, and reports what the cluster model refuses in them
// (a toleration without a key or operator, a bad label, a taint effect),
// so that a scenario that parses also runs.
func (s *Scenario) checkObjects() []error {
	var errs []error
	snap := snapshot.New()
	for i := range s.NodeGroups {
		g := &s.NodeGroups[i]
		err := snap.SetNodeGroup(snapshot.NodeGroup{ID: g.Name, MinSize: g.MinSize, MaxSize: g.MaxSize, Template: g.TemplateNode()})
		if err != nil {
			errs = append(errs, fmt.Errorf("nodeGroups[%d]: %w", i, err))
		}
	}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: map[string]string{"app": w.Name}},
			Spec: w.Pod.Spec()}
		if _, err := snapshot.NewPodInfo(pod); err != nil {
			errs = append(errs, fmt.Errorf("workloads[%d].pod: %w", i, err))
		}
	}
	return errs
}
