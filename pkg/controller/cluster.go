package controller

import (
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// listers are the informer caches the loop reads.
type listers struct {
	nodes      corelisters.NodeLister
	pods       corelisters.PodLister
	namespaces corelisters.NamespaceLister
	pvs        corelisters.PersistentVolumeLister
	pvcs       corelisters.PersistentVolumeClaimLister
	classes    storagelisters.StorageClassLister
	pdbs       policylisters.PodDisruptionBudgetLister
	daemonSets appslisters.DaemonSetLister
	// replicaSets and rcs give --min-replica-count its replica counts.
	replicaSets appslisters.ReplicaSetLister
	rcs         corelisters.ReplicationControllerLister
	synced      []cache.InformerSynced
}

// newListers registers the informers the loop needs. ReplicaSets and
// ReplicationControllers give --min-replica-count its replica counts;
// StatefulSets and Jobs are watched too so that drain rules can later check
// that a pod's controller exists.
func newListers(f informers.SharedInformerFactory) *listers {
	core, apps := f.Core().V1(), f.Apps().V1()
	l := &listers{
		nodes:       core.Nodes().Lister(),
		pods:        core.Pods().Lister(),
		namespaces:  core.Namespaces().Lister(),
		pvs:         core.PersistentVolumes().Lister(),
		pvcs:        core.PersistentVolumeClaims().Lister(),
		classes:     f.Storage().V1().StorageClasses().Lister(),
		pdbs:        f.Policy().V1().PodDisruptionBudgets().Lister(),
		daemonSets:  apps.DaemonSets().Lister(),
		replicaSets: apps.ReplicaSets().Lister(),
		rcs:         core.ReplicationControllers().Lister(),
	}
	for _, inf := range []cache.SharedIndexInformer{
		core.Nodes().Informer(), core.Pods().Informer(), core.Namespaces().Informer(), core.ReplicationControllers().Informer(),
		core.PersistentVolumes().Informer(), core.PersistentVolumeClaims().Informer(),
		f.Storage().V1().StorageClasses().Informer(), f.Policy().V1().PodDisruptionBudgets().Informer(),
		apps.DaemonSets().Informer(), apps.ReplicaSets().Informer(), apps.StatefulSets().Informer(),
		f.Batch().V1().Jobs().Informer(),
	} {
		l.synced = append(l.synced, inf.HasSynced)
	}
	return l
}

// view is one loop's picture of the cluster.
type view struct {
	snap       *snapshot.Snapshot
	pending    []*v1.Pod
	daemonSets []*appsv1.DaemonSet
	pdbs       []*policyv1.PodDisruptionBudget
	replicas   drain.Replicas
	// unmanaged counts nodes that belong to no group.
	unmanaged int
}

// buildView snapshots the informer caches and the provider's groups. Pods
// that cannot be added (a node that vanished between lists) are skipped:
// the next loop sees a consistent picture.
func buildView(l *listers, cp cloudprovider.CloudProvider) (*view, error) {
	v := &view{snap: snapshot.New()}
	for _, g := range cp.NodeGroups() {
		if err := v.snap.SetNodeGroup(g); err != nil {
			return nil, fmt.Errorf("cloud provider %s: %w", cp.Name(), err)
		}
	}
	if err := addObjects(v.snap, l); err != nil {
		return nil, err
	}
	nodes, err := l.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		group, err := cp.NodeGroupForNode(n)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
		if group != "" && v.snap.NodeGroup(group) == nil {
			group = ""
		}
		if group == "" {
			v.unmanaged++
		}
		if err := v.snap.AddNodeInGroup(n, group); err != nil {
			return nil, err
		}
	}
	pods, err := l.pods.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	for _, p := range pods {
		switch {
		case p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed:
		case p.Spec.NodeName != "":
			if v.snap.Node(p.Spec.NodeName) != nil {
				_ = v.snap.AddPod(p) // an invalid pod is left out rather than stopping the loop
			}
		case unschedulable(p):
			v.pending = append(v.pending, p)
		}
	}
	if v.daemonSets, err = l.daemonSets.List(labels.Everything()); err != nil {
		return nil, err
	}
	if v.replicas, err = replicaCounts(l); err != nil {
		return nil, err
	}
	if v.pdbs, err = l.pdbs.List(labels.Everything()); err != nil {
		return nil, err
	}
	return v, nil
}

func addObjects(s *snapshot.Snapshot, l *listers) error {
	nss, err := l.namespaces.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, ns := range nss {
		_ = s.SetNamespace(ns)
	}
	pvs, err := l.pvs.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pv := range pvs {
		_ = s.SetPersistentVolume(pv)
	}
	pvcs, err := l.pvcs.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pvc := range pvcs {
		_ = s.SetPersistentVolumeClaim(pvc)
	}
	classes, err := l.classes.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, sc := range classes {
		_ = s.SetStorageClass(sc)
	}
	return nil
}

// unschedulable: the scheduler tried the pod and found no node.
func unschedulable(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable
		}
	}
	return false
}

// replicaCounts reads spec.replicas of every ReplicaSet and
// ReplicationController (1 when unset, the API default).
func replicaCounts(l *listers) (drain.Replicas, error) {
	out := drain.Replicas{}
	rss, err := l.replicaSets.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, rs := range rss {
		out[drain.ControllerKey{Namespace: rs.Namespace, Kind: "ReplicaSet", Name: rs.Name}] = ptr.Deref(rs.Spec.Replicas, 1)
	}
	rcs, err := l.rcs.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, rc := range rcs {
		out[drain.ControllerKey{Namespace: rc.Namespace, Kind: "ReplicationController", Name: rc.Name}] = ptr.Deref(rc.Spec.Replicas, 1)
	}
	return out, nil
}
