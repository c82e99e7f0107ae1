package controller

import (
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

	"github.com/gpuscale/gpuscale/pkg/pending"
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
	csiNodes   storagelisters.CSINodeLister
	pdbs       policylisters.PodDisruptionBudgetLister
	daemonSets appslisters.DaemonSetLister
	// replicaSets and rcs give --min-replica-count its replica counts.
	replicaSets appslisters.ReplicaSetLister
	rcs         corelisters.ReplicationControllerLister
	// dra reads resource.k8s.io/v1; nil where the API server does not
	// serve it.
	dra       *draListers
	informers []namedInformer
}

// namedInformer is an informer and the resource it watches, for reports.
type namedInformer struct {
	name     string
	informer cache.SharedIndexInformer
}

// newListers registers the informers the loop needs. ReplicaSets and
// ReplicationControllers give --min-replica-count its replica counts;
// StatefulSets and Jobs are watched too so that drain rules can later check
// that a pod's controller exists. withDRA adds the resource.k8s.io/v1
// informers (servesDRA).
func newListers(f informers.SharedInformerFactory, withDRA bool) *listers {
	core, apps := f.Core().V1(), f.Apps().V1()
	l := &listers{
		nodes:       core.Nodes().Lister(),
		pods:        core.Pods().Lister(),
		namespaces:  core.Namespaces().Lister(),
		pvs:         core.PersistentVolumes().Lister(),
		pvcs:        core.PersistentVolumeClaims().Lister(),
		classes:     f.Storage().V1().StorageClasses().Lister(),
		csiNodes:    f.Storage().V1().CSINodes().Lister(),
		pdbs:        f.Policy().V1().PodDisruptionBudgets().Lister(),
		daemonSets:  apps.DaemonSets().Lister(),
		replicaSets: apps.ReplicaSets().Lister(),
		rcs:         core.ReplicationControllers().Lister(),
	}
	l.informers = []namedInformer{
		{"nodes", core.Nodes().Informer()}, {"pods", core.Pods().Informer()}, {"namespaces", core.Namespaces().Informer()},
		{"persistentvolumes", core.PersistentVolumes().Informer()},
		{"persistentvolumeclaims", core.PersistentVolumeClaims().Informer()},
		{"storageclasses", f.Storage().V1().StorageClasses().Informer()},
		{"csinodes", f.Storage().V1().CSINodes().Informer()},
		{"poddisruptionbudgets", f.Policy().V1().PodDisruptionBudgets().Informer()},
		{"daemonsets", apps.DaemonSets().Informer()}, {"replicasets", apps.ReplicaSets().Informer()},
		{"replicationcontrollers", core.ReplicationControllers().Informer()},
		{"statefulsets", apps.StatefulSets().Informer()}, {"jobs", f.Batch().V1().Jobs().Informer()},
	}
	if withDRA {
		var infs []namedInformer
		l.dra, infs = newDRAListers(f)
		l.informers = append(l.informers, infs...)
	}
	return l
}

// view is one loop's picture of the cluster.
type view struct {
	snap    *snapshot.Snapshot
	pending []*v1.Pod
	// otherSchedulers count the waiting pods left alone (pending.Select).
	otherSchedulers []pending.SchedulerPods
	daemonSets      []*appsv1.DaemonSet
	pdbs            []*policyv1.PodDisruptionBudget
	replicas        drain.Replicas
	// unmanaged counts nodes that belong to no group.
	unmanaged int
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
