package engine

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// initDaemonSets turns the scenario's DaemonSets into the objects the core
// counts on template nodes.
func (e *Engine) initDaemonSets() {
	for _, d := range e.sc.DaemonSets {
		labels := map[string]string{"daemonset": d.Name}
		e.work.daemonSets = append(e.work.daemonSets, &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, UID: types.UID("ds/" + d.Namespace + "/" + d.Name)},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: v1.PodSpec{
					Containers:   []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Requests: d.Pod.Requests.DeepCopy()}}},
					NodeSelector: d.Pod.NodeSelector, Tolerations: d.Pod.Tolerations, Priority: d.Pod.Priority,
				}},
			},
		})
	}
}

// placeDaemonSetPods runs every DaemonSet that fits a new node there, as
// the DaemonSet controller would.
func (e *Engine) placeDaemonSetPods(n *v1.Node) error {
	for _, ds := range e.work.daemonSets {
		spec := ds.Spec.Template.Spec
		if !tolerates(spec.Tolerations, n.Spec.Taints) {
			continue
		}
		if ok, _ := nodeaffinity.GetRequiredNodeAffinity(&v1.Pod{Spec: spec}).Match(n); !ok {
			continue
		}
		yes := true
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-" + n.Name, Namespace: ds.Namespace,
				UID: types.UID(ds.Namespace + "/" + ds.Name + "-" + n.Name), Labels: ds.Spec.Template.Labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes}}},
			Spec:   *spec.DeepCopy(),
			Status: v1.PodStatus{Phase: v1.PodRunning},
		}
		pod.Spec.NodeName = n.Name
		pi, err := snapshot.NewPodInfo(pod)
		if err != nil {
			return fmt.Errorf("daemonSet %s: %w", ds.Name, err)
		}
		if err := e.snap.AddPodInfo(pi, n.Name); err != nil {
			return err
		}
	}
	return nil
}

func tolerates(tolerations []v1.Toleration, taints []v1.Taint) bool {
	for i := range taints {
		t := &taints[i]
		if t.Effect == v1.TaintEffectPreferNoSchedule {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(klog.Background(), tolerations, t, false) {
			return false
		}
	}
	return true
}

// isDaemonSetPod: a pod the engine placed for a DaemonSet.
func (e *Engine) isDaemonSetPod(pi *snapshot.PodInfo) bool {
	for _, o := range pi.Pod.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// pdbs are the workloads' PodDisruptionBudgets with the status the
// disruption controller would give them now: disruptions allowed is how
// many running pods are above the budget's floor.
func (e *Engine) pdbs() []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, w := range e.work.list {
		b := w.cfg.PDB
		if b == nil {
			continue
		}
		running, expected := 0, 0
		for _, p := range e.work.pods {
			if p.w == w {
				expected++
				if p.node != "" {
					running++
				}
			}
		}
		if w.cfg.Deployment != nil {
			expected = w.desired
		}
		floor := 0
		if b.MinAvailable != nil {
			floor = int(*b.MinAvailable)
		} else {
			floor = expected - int(*b.MaxUnavailable)
		}
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: w.cfg.Name, Namespace: w.cfg.Namespace},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.cfg.Name}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: int32(max(running-floor, 0)),
				CurrentHealthy: int32(running), DesiredHealthy: int32(floor), ExpectedPods: int32(expected)},
		}
		out = append(out, pdb)
	}
	return out
}

// cordon taints a node being removed, so nothing more is placed there.
func (e *Engine) cordon(name string) error {
	return e.replaceNode(name, func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: disruption.TaintToBeDeleted, Effect: v1.TaintEffectNoSchedule})
	})
}

// replaceNode changes a node, keeping its pods.
func (e *Engine) replaceNode(name string, change func(*v1.Node)) error {
	ni := e.snap.Node(name)
	if ni == nil {
		return nil
	}
	n := ni.Node.DeepCopy()
	change(n)
	pods := append([]*snapshot.PodInfo(nil), ni.Pods...)
	group := ni.Group
	if err := e.snap.RemoveNode(name); err != nil {
		return err
	}
	if err := e.snap.AddNodeInGroup(n, group); err != nil {
		return err
	}
	for _, pi := range pods {
		if err := e.snap.AddPodInfo(pi, name); err != nil {
			return err
		}
	}
	e.touch()
	return nil
}

// creationFailed reports a node the cloud could not create; the core
// lowers the target and backs the group off.
func (e *Engine) creationFailed(c *creation) {
	c.failed = true
	e.outcomes = append(e.outcomes, autoscaler.CreationFailed{Group: c.group.cfg.Name, Count: 1, Class: "OutOfResources",
		Code: "Stockout", Message: c.why, At: clock(e.now)})
	e.touch()
}

// fail keeps the first error of an action that cannot return one.
func (e *Engine) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// replicas are the desired replicas of each Deployment's ReplicaSet, as the
// live shell lists them, for --min-replica-count.
func (e *Engine) replicas() drain.Replicas {
	out := drain.Replicas{}
	for _, w := range e.work.list {
		if w.cfg.Deployment != nil {
			out[drain.ControllerKey{Namespace: w.cfg.Namespace, Kind: "ReplicaSet", Name: w.cfg.Name + "-rs"}] = int32(w.desired)
		}
	}
	return out
}
