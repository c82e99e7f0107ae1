package controller

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/pending"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// mirror keeps one snapshot in step with the informer caches from loop to
// loop: only what changed since the last loop is added, updated or
// removed. Informers replace an object when it changes, so an unchanged
// object is the same pointer; rebuilding 80,000 pods every loop would cost
// more than the whole decision.
type mirror struct {
	// pending picks the pending pods among those waiting for a node.
	pending pending.Options
	snap    *snapshot.Snapshot
	nodes   map[string]mirroredNode
	pods    map[podKey]mirroredPod
	dra     draKeys
	// objects are the namespaces and storage objects mirrored.
	objects objectKeys
	loop    uint64 // counts syncs; a pod not seen in the latest is gone
}

type podKey struct{ namespace, name string }

// objectKeys are the namespaces, volumes, claims, storage classes and
// CSINodes the mirror put in the snapshot, so that those the caches no
// longer hold are removed.
type objectKeys struct {
	namespaces, volumes, claims, classes, csiNodes map[objectKey]bool
}

// mirroredPod is the object in the snapshot and the sync that last saw it.
type mirroredPod struct {
	obj  *v1.Pod
	loop uint64
}

type mirroredNode struct {
	obj   *v1.Node
	group string
}

func newMirror(o pending.Options) *mirror {
	return &mirror{pending: o, snap: snapshot.New(), nodes: map[string]mirroredNode{}, pods: map[podKey]mirroredPod{}}
}

// sync brings the snapshot to the caches and the provider's groups and
// returns the loop's view. Pods that cannot be added (a node that vanished
// between lists, an invalid pod) are left out; the next loop tries again.
func (m *mirror) sync(l *listers, cp cloudprovider.CloudProvider) (*view, error) {
	v := &view{snap: m.snap}
	groups := map[string]bool{}
	for _, g := range cp.NodeGroups() {
		if err := m.snap.SetNodeGroup(g); err != nil {
			return nil, fmt.Errorf("cloud provider %s: %w", cp.Name(), err)
		}
		groups[g.ID] = true
	}
	if err := m.syncObjects(l); err != nil {
		return nil, err
	}
	if err := m.syncNodes(l, cp, groups, v); err != nil {
		return nil, err
	}
	for _, g := range m.snap.NodeGroups() {
		if !groups[g.ID] {
			m.snap.RemoveNodeGroup(g.ID)
		}
	}
	if err := m.syncPods(l, v); err != nil {
		return nil, err
	}
	if l.dra != nil {
		if err := m.syncDRAClaims(l.dra); err != nil {
			return nil, err
		}
	}
	var err error
	if v.daemonSets, err = l.daemonSets.List(labels.Everything()); err != nil {
		return nil, err
	}
	slices.SortFunc(v.daemonSets, func(a, b *appsv1.DaemonSet) int { return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	if v.replicas, err = replicaCounts(l); err != nil {
		return nil, err
	}
	if v.pdbs, err = l.pdbs.List(labels.Everything()); err != nil {
		return nil, err
	}
	slices.SortFunc(v.pdbs, func(a, b *policyv1.PodDisruptionBudget) int {
		return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return v, nil
}

func (m *mirror) syncNodes(l *listers, cp cloudprovider.CloudProvider, groups map[string]bool, v *view) error {
	nodes, err := l.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(nodes))
	slices.SortFunc(nodes, func(a, b *v1.Node) int { return cmp.Compare(a.Name, b.Name) })
	for _, n := range nodes {
		seen[n.Name] = true
		group, err := cp.NodeGroupForNode(n)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		if !groups[group] {
			group = ""
		}
		if group == "" {
			v.unmanaged++
		}
		old, had := m.nodes[n.Name]
		switch {
		case !had:
			err = m.snap.AddNodeInGroup(n, group)
		case old.obj != n || old.group != group:
			err = m.snap.UpdateNode(n, group)
		}
		if err != nil {
			return err
		}
		m.nodes[n.Name] = mirroredNode{obj: n, group: group}
	}
	for name := range m.nodes {
		if seen[name] {
			continue
		}
		if ni := m.snap.Node(name); ni != nil {
			for _, pi := range ni.Pods {
				delete(m.pods, podKey{pi.Pod.Namespace, pi.Pod.Name})
			}
			if err := m.snap.RemoveNode(name); err != nil {
				return err
			}
		}
		delete(m.nodes, name)
	}
	return nil
}

func (m *mirror) syncPods(l *listers, v *view) error {
	pods, err := l.pods.List(labels.Everything())
	if err != nil {
		return err
	}
	m.loop++
	if len(m.pods) == 0 {
		m.pods = make(map[podKey]mirroredPod, len(pods))
		m.snap.ReservePods(len(pods))
	}
	var added []*v1.Pod
	waiting := pending.NewCounter(m.pending)
	for _, p := range pods {
		bound := p.Spec.NodeName != "" && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed &&
			m.snap.Node(p.Spec.NodeName) != nil
		if !bound {
			waiting.Add(p)
			continue
		}
		k := podKey{p.Namespace, p.Name}
		if mp, had := m.pods[k]; had {
			if mp.obj == p {
				m.pods[k] = mirroredPod{obj: p, loop: m.loop}
				continue
			}
			_ = m.snap.RemovePod(p.Namespace, p.Name)
			delete(m.pods, k)
		}
		added = append(added, p)
	}
	for k, mp := range m.pods {
		if mp.loop != m.loop {
			_ = m.snap.RemovePod(k.namespace, k.name)
			delete(m.pods, k)
		}
	}
	for _, pi := range podInfos(added) {
		if pi == nil {
			continue // an invalid pod is left out rather than stopping the loop
		}
		if err := m.snap.AddPodInfo(pi, pi.Pod.Spec.NodeName); err == nil {
			m.pods[podKey{pi.Pod.Namespace, pi.Pod.Name}] = mirroredPod{obj: pi.Pod, loop: m.loop}
		}
	}
	sel := waiting.Selection()
	v.pending, v.otherSchedulers = sel.Pods, sel.OtherSchedulers
	slices.SortFunc(v.pending, func(a, b *v1.Pod) int {
		if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return nil
}

// podInfos computes the snapshot's view of each pod, on every core at
// once (a new autoscaler meets every pod of the cluster in its first
// loop), nil for an invalid pod. The result is in the order pods are
// bound: by node, then namespace and name, so a node's pods keep one
// order whatever order the informer listed them in.
func podInfos(pods []*v1.Pod) []*snapshot.PodInfo {
	sortByNode(pods)
	out := make([]*snapshot.PodInfo, len(pods))
	workers := min(runtime.GOMAXPROCS(0), len(pods)/1000+1)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(pods); i += workers {
				out[i], _ = snapshot.NewPodInfo(pods[i])
			}
		}(w)
	}
	wg.Wait()
	return out
}

// sortByNode orders pods by node, then namespace and name: bucketed by
// node first, so that only each node's few pods are compared.
func sortByNode(pods []*v1.Pod) {
	byNode := map[string][]*v1.Pod{}
	for _, p := range pods {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	names := make([]string, 0, len(byNode))
	for n := range byNode {
		names = append(names, n)
	}
	slices.Sort(names)
	out := pods[:0]
	for _, n := range names {
		bucket := byNode[n]
		slices.SortFunc(bucket, func(a, b *v1.Pod) int {
			if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
				return c
			}
			return cmp.Compare(a.Name, b.Name)
		})
		out = append(out, bucket...)
	}
}

// syncObjects mirrors the namespaces, volumes, claims, storage classes and
// CSINodes as the pods are: only those that changed are set, and those gone are
// forgotten. DRA device classes, claim templates and slices follow.
func (m *mirror) syncObjects(l *listers) error {
	nss, err := l.namespaces.List(labels.Everything())
	if err != nil {
		return err
	}
	m.objects.namespaces = mirrorObjects(m.objects.namespaces, nss,
		func(k objectKey) *v1.Namespace { return m.snap.Namespace(k.name) },
		m.snap.SetNamespace, func(k objectKey) { m.snap.RemoveNamespace(k.name) })
	pvs, err := l.pvs.List(labels.Everything())
	if err != nil {
		return err
	}
	m.objects.volumes = mirrorObjects(m.objects.volumes, pvs,
		func(k objectKey) *v1.PersistentVolume { return m.snap.PersistentVolume(k.name) },
		m.snap.SetPersistentVolume, func(k objectKey) { m.snap.RemovePersistentVolume(k.name) })
	pvcs, err := l.pvcs.List(labels.Everything())
	if err != nil {
		return err
	}
	m.objects.claims = mirrorObjects(m.objects.claims, pvcs,
		func(k objectKey) *v1.PersistentVolumeClaim { return m.snap.PersistentVolumeClaim(k.namespace, k.name) },
		m.snap.SetPersistentVolumeClaim, func(k objectKey) { m.snap.RemovePersistentVolumeClaim(k.namespace, k.name) })
	classes, err := l.classes.List(labels.Everything())
	if err != nil {
		return err
	}
	m.objects.classes = mirrorObjects(m.objects.classes, classes,
		func(k objectKey) *storagev1.StorageClass { return m.snap.StorageClass(k.name) },
		m.snap.SetStorageClass, func(k objectKey) { m.snap.RemoveStorageClass(k.name) })
	csiNodes, err := l.csiNodes.List(labels.Everything())
	if err != nil {
		return err
	}
	m.objects.csiNodes = mirrorObjects(m.objects.csiNodes, csiNodes,
		func(k objectKey) *storagev1.CSINode { return m.snap.CSINode(k.name) },
		m.snap.SetCSINode, func(k objectKey) { m.snap.RemoveCSINode(k.name) })
	if l.dra != nil {
		return m.syncDRADevices(l.dra)
	}
	return nil
}
