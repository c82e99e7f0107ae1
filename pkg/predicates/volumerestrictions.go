package predicates

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// restrictionState is what kube-scheduler's VolumeRestrictions plugin
// needs: the pod's in-tree disks that one node cannot mount twice, and
// whether a ReadWriteOncePod claim of the pod is in use by another pod.
// Only pods with such volumes or with claims fill it.
type restrictionState struct {
	// disks are the pod's GCE PD, AWS EBS, iSCSI and RBD volumes.
	disks []*v1.Volume
}

// needsRestrictions: the pod mounts a claim (ReadWriteOncePod) or an
// in-tree disk.
func needsRestrictions(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].PersistentVolumeClaim != nil || isRestrictedDisk(&pod.Spec.Volumes[i]) {
			return true
		}
	}
	return false
}

func isRestrictedDisk(v *v1.Volume) bool {
	return v.GCEPersistentDisk != nil || v.AWSElasticBlockStore != nil || v.RBD != nil || v.ISCSI != nil
}

// prepareRestrictions is VolumeRestrictions' PreFilter: every claim the pod
// mounts by name must exist, and a ReadWriteOncePod claim must not be used
// by a pod already placed (one user at most, cluster-wide).
func (pc *PodCheck) prepareRestrictions() Result {
	rs := &pc.vol.restrict
	rs.disks = rs.disks[:0]
	snap, pod := pc.checker.snap, pc.pod
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if isRestrictedDisk(vol) {
			rs.disks = append(rs.disks, vol)
		}
		if vol.PersistentVolumeClaim == nil {
			continue
		}
		name := vol.PersistentVolumeClaim.ClaimName
		pvc := snap.PersistentVolumeClaim(pod.Namespace, name)
		if pvc == nil {
			return Result{Predicate: VolumeRestrictions, Reason: ReasonVolumeUnresolvable,
				Detail: fmt.Sprintf("volume %s: PersistentVolumeClaim %s/%s not found", vol.Name, pod.Namespace, name)}
		}
		if !hasAccessMode(pvc.Spec.AccessModes, v1.ReadWriteOncePod) {
			continue
		}
		if user := claimUser(snap, pod, name); user != nil {
			return Result{Predicate: VolumeRestrictions, Reason: ReasonReadWriteOncePod,
				Detail: pod.Namespace + "/" + name, Detail2: snapshot.PodKey(user.Pod)}
		}
	}
	return Result{}
}

func hasAccessMode(modes []v1.PersistentVolumeAccessMode, mode v1.PersistentVolumeAccessMode) bool {
	for _, m := range modes {
		if m == mode {
			return true
		}
	}
	return false
}

// claimUser is a placed pod other than pod that mounts the claim by name,
// or nil. (A pod a planner is moving is out of the snapshot already, as a
// pending pod is out of the scheduler's cache.)
func claimUser(snap *snapshot.Snapshot, pod *v1.Pod, claim string) *snapshot.PodInfo {
	for _, pi := range snap.PodsInNamespace(pod.Namespace) {
		if pi.Pod.Name == pod.Name || snap.NodeOf(pi) == nil {
			continue
		}
		for i := range pi.Pod.Spec.Volumes {
			if src := pi.Pod.Spec.Volumes[i].PersistentVolumeClaim; src != nil && src.ClaimName == claim {
				return pi
			}
		}
	}
	return nil
}

// checkRestrictions is VolumeRestrictions' Filter for in-tree disks: the
// node's pods must not mount one of the pod's disks, unless every mount of
// a GCE PD, iSCSI or RBD disk is read-only.
func (pc *PodCheck) checkRestrictions(ni *snapshot.NodeInfo) Result {
	for _, vol := range pc.vol.restrict.disks {
		for _, existing := range ni.Pods {
			if diskConflict(vol, existing.Pod) {
				return Result{Predicate: VolumeRestrictions, Reason: ReasonDiskConflict, Detail: vol.Name, Detail2: snapshot.PodKey(existing.Pod)}
			}
		}
	}
	return Result{}
}

// diskConflict: pod mounts the disk of vol as the scheduler's
// isVolumeConflict judges it.
func diskConflict(vol *v1.Volume, pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		ev := &pod.Spec.Volumes[i]
		if d, e := vol.GCEPersistentDisk, ev.GCEPersistentDisk; d != nil && e != nil && d.PDName == e.PDName && !(d.ReadOnly && e.ReadOnly) {
			return true
		}
		if d, e := vol.AWSElasticBlockStore, ev.AWSElasticBlockStore; d != nil && e != nil && d.VolumeID == e.VolumeID {
			return true
		}
		if d, e := vol.ISCSI, ev.ISCSI; d != nil && e != nil && d.IQN == e.IQN && !(d.ReadOnly && e.ReadOnly) {
			return true
		}
		if d, e := vol.RBD, ev.RBD; d != nil && e != nil && overlap(d.CephMonitors, e.CephMonitors) &&
			d.RBDPool == e.RBDPool && d.RBDImage == e.RBDImage && !(d.ReadOnly && e.ReadOnly) {
			return true
		}
	}
	return false
}

func overlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}
