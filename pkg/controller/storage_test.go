package controller

import (
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/pending"
)

// Volumes, claims, storage classes and CSINodes are mirrored as pods are: a loop in
// which none changed leaves the snapshot untouched (its generation kept, so
// no prepared pod check is recomputed), a changed one is replaced, and a
// deleted one is forgotten.
func TestMirrorFollowsStorageIncrementally(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	l := newListers(f, false)
	core, storage := f.Core().V1(), f.Storage().V1()
	pvs, pvcs, classes := core.PersistentVolumes().Informer().GetIndexer(), core.PersistentVolumeClaims().Informer().GetIndexer(),
		storage.StorageClasses().Informer().GetIndexer()
	csiNodes := storage.CSINodes().Informer().GetIndexer()
	cp := &groupsProvider{groups: []string{"a"}}
	f0 := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	l0 := newListers(f0, false)
	m := newMirror(pending.Options{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sync := func() {
		t.Helper()
		if _, err := m.sync(l, cp); err != nil {
			t.Fatal(err)
		}
	}
	must(core.Nodes().Informer().GetIndexer().Add(groupNode("n1", "a")))
	must(f0.Core().V1().Nodes().Informer().GetIndexer().Add(groupNode("n1", "a")))
	pv := builder.Volume("pv-a").Zone("topology.kubernetes.io/zone", "a").Build()
	pvc := builder.VolumeClaim("data").BoundTo("pv-a").Build()
	class := builder.StorageClass("gp3").WaitForFirstConsumer().Build()
	must(pvs.Add(pv))
	must(pvcs.Add(pvc))
	must(classes.Add(class))
	csiNode := builder.CSINode("n1").Driver("ebs.csi.aws.com", 25).Build()
	must(csiNodes.Add(csiNode))
	sync()
	if m.snap.PersistentVolume("pv-a") != pv || m.snap.PersistentVolumeClaim("default", "data") != pvc || m.snap.StorageClass("gp3") != class ||
		m.snap.CSINode("n1") != csiNode {
		t.Fatal("storage objects missing from the snapshot after the first loop")
	}
	// A loop moves the generation by as much as it does in a cluster
	// without storage objects: none of them is set again.
	gen := m.snap.Generation()
	sync()
	bare := newMirror(pending.Options{})
	if _, err := bare.sync(l0, cp); err != nil {
		t.Fatal(err)
	}
	bareGen := bare.snap.Generation()
	if _, err := bare.sync(l0, cp); err != nil {
		t.Fatal(err)
	}
	if got, want := m.snap.Generation()-gen, bare.snap.Generation()-bareGen; got != want {
		t.Errorf("a loop with nothing changed moved the generation by %d, a cluster without storage objects by %d", got, want)
	}

	moved := builder.Volume("pv-a").Zone("topology.kubernetes.io/zone", "b").Build()
	must(pvs.Update(moved))
	sync()
	if m.snap.PersistentVolume("pv-a") != moved {
		t.Error("the changed volume was not replaced")
	}
	raised := builder.CSINode("n1").Driver("ebs.csi.aws.com", 39).Build()
	must(csiNodes.Update(raised))
	sync()
	if m.snap.CSINode("n1") != raised {
		t.Error("the changed CSINode was not replaced")
	}

	must(pvs.Delete(moved))
	must(pvcs.Delete(pvc))
	must(classes.Delete(class))
	must(csiNodes.Delete(raised))
	sync()
	if m.snap.PersistentVolume("pv-a") != nil || m.snap.PersistentVolumeClaim("default", "data") != nil || m.snap.StorageClass("gp3") != nil ||
		m.snap.CSINode("n1") != nil {
		t.Error("deleted storage objects are still in the snapshot")
	}
}
