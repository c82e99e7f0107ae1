package scaleup

import (
	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Overprovisioning and preemption. Pods below
// --expendable-pods-priority-cutoff may be preempted at any time, so the
// room they hold is free for pending pods: scale-up takes them out of its
// view of the cluster, as the Cluster Autoscaler leaves them out of its
// snapshot. A pending pod the scheduler has nominated onto a node
// (status.nominatedNodeName: it is waiting for the pods it preempts there
// to leave) will run on that node: it is placed there without checks, as
// the scheduler has already made its decision, and never orders a node.

// expendable: the pod's priority is below the cutoff.
func (r *run) expendable(pod *v1.Pod) bool {
	return priority(pod) < r.opts.ExpendablePodsPriorityCutoff
}

// nominatedNode is the registered node the scheduler nominated the pod
// onto, or "" when none (or when that node is gone).
func (r *run) nominatedNode(pod *v1.Pod) string {
	name := pod.Status.NominatedNodeName
	if name == "" || r.snap.Node(name) == nil {
		return ""
	}
	return name
}

// dropExpendablePods takes the scheduled expendable pods out of the
// (forked) snapshot.
func (r *run) dropExpendablePods() {
	var doomed []*v1.Pod
	for _, ni := range r.snap.Nodes() {
		for _, pi := range ni.Pods {
			if r.expendable(pi.Pod) {
				doomed = append(doomed, pi.Pod)
			}
		}
	}
	for _, pod := range doomed {
		_ = r.snap.RemovePod(pod.Namespace, pod.Name) // it was just listed
	}
}

// placeNominated binds the nominated pods to their nodes in the (forked)
// snapshot and counts them as pods that will schedule there. A pod that
// cannot be bound (it is already in the snapshot) is left out: it is not
// pending.
func (r *run) placeNominated(pods []*v1.Pod) error {
	for _, pod := range pods {
		pi, err := snapshot.NewPodInfo(pod)
		if err != nil {
			return err
		}
		node := r.nominatedNode(pod)
		if err := r.snap.AddPodInfo(pi, node); err != nil {
			continue
		}
		r.plan.WillSchedule = append(r.plan.WillSchedule, pod)
		r.plan.Placements = append(r.plan.Placements, node)
	}
	return nil
}
