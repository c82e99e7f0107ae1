package predicates

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// limitState is what kube-scheduler's NodeVolumeLimits plugin needs of a
// pod that mounts claims: the CSI volumes the pod would attach, each known
// by driver and volume handle so that a volume already attached to the node
// (another pod uses it) is not counted twice. Only pods with claims fill it.
type limitState struct {
	volumes []attachedVolume
	// seen and scratch are reused per node checked: the volumes of the
	// node's pods, and those of one pod.
	seen    map[attachedVolume]struct{}
	scratch []attachedVolume
}

// attachedVolume is one CSI volume as the attach limit counts it.
type attachedVolume struct {
	driver string
	// handle is the volume's CSI handle; for a claim not bound yet it is
	// "claim:" and the claim's namespace/name, which no handle equals.
	handle string
}

// inTreeDrivers are the CSI drivers the scheduler counts an in-tree
// provisioner's unbound claims against (CSI migration, on by default for
// these four).
var inTreeDrivers = map[string]string{
	"kubernetes.io/aws-ebs":    "ebs.csi.aws.com",
	"kubernetes.io/gce-pd":     "pd.csi.storage.gke.io",
	"kubernetes.io/azure-disk": "disk.csi.azure.com",
	"kubernetes.io/cinder":     "cinder.csi.openstack.org",
}

// needsLimits: the pod mounts a claim or an in-tree disk that CSI
// migration counts (NodeVolumeLimits' PreFilter skips the others).
func needsLimits(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.PersistentVolumeClaim != nil || vol.Ephemeral != nil {
			return true
		}
		if _, ok := inlineVolume(vol); ok {
			return true
		}
	}
	return false
}

// prepareLimits lists the CSI volumes of the pod: claims bound to CSI
// PersistentVolumes, claims not bound yet under their class's provisioner,
// and in-tree disks mounted inline under the CSI driver that took them
// over. Volumes of other kinds do not count.
func (pc *PodCheck) prepareLimits() {
	l := &pc.vol.limits
	l.volumes = appendAttachable(l.volumes[:0], pc.checker.snap, pc.pod)
}

// appendAttachable appends to out the CSI volumes pod mounts, each once.
// A claim that does not exist is skipped, except a generic ephemeral
// volume's: a pod placed in a simulation has no claims made, and a pod
// running has its own (see docs/predicates.md).
func appendAttachable(out []attachedVolume, snap *snapshot.Snapshot, pod *v1.Pod) []attachedVolume {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		var pvc *v1.PersistentVolumeClaim
		switch {
		case vol.PersistentVolumeClaim != nil:
			pvc = snap.PersistentVolumeClaim(pod.Namespace, vol.PersistentVolumeClaim.ClaimName)
		case vol.Ephemeral != nil:
			name := ephemeral.VolumeClaimName(pod, vol)
			if pvc = snap.PersistentVolumeClaim(pod.Namespace, name); pvc == nil {
				pvc = ephemeralStandIn(snap, pod, vol, name)
			} else if pvc != nil && ephemeral.VolumeIsForPod(pod, pvc) != nil {
				pvc = nil
			}
		default:
			if av, ok := inlineVolume(vol); ok && !containsVolume(out, av) {
				out = append(out, av)
			}
			continue
		}
		if pvc == nil {
			continue
		}
		if av, ok := claimVolume(snap, pvc); ok && !containsVolume(out, av) {
			out = append(out, av)
		}
	}
	return out
}

// inlineVolume is the CSI volume an in-tree disk mounted inline becomes
// under CSI migration (on by default for these four plugins), with the
// handle the scheduler's translation gives it.
func inlineVolume(vol *v1.Volume) (attachedVolume, bool) {
	switch {
	case vol.AWSElasticBlockStore != nil:
		id := vol.AWSElasticBlockStore.VolumeID
		if rest, ok := strings.CutPrefix(id, "aws://"); ok { // aws://zone/vol-id
			id = strings.Trim(rest[strings.Index(rest, "/")+1:], "/")
		}
		return attachedVolume{driver: "ebs.csi.aws.com", handle: id}, true
	case vol.GCEPersistentDisk != nil: // the zone of an inline disk is unknown
		return attachedVolume{driver: "pd.csi.storage.gke.io",
			handle: "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/" + vol.GCEPersistentDisk.PDName}, true
	case vol.AzureDisk != nil:
		return attachedVolume{driver: "disk.csi.azure.com", handle: vol.AzureDisk.DataDiskURI}, true
	case vol.Cinder != nil:
		return attachedVolume{driver: "cinder.csi.openstack.org", handle: vol.Cinder.VolumeID}, true
	}
	return attachedVolume{}, false
}

func containsVolume(vs []attachedVolume, v attachedVolume) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// claimVolume is the CSI volume a claim stands for: its PersistentVolume's
// driver and handle once bound; before that (or when the volume is
// unknown), its class's provisioner and the claim itself. In-tree
// PersistentVolumes are not counted (see docs/predicates.md).
func claimVolume(snap *snapshot.Snapshot, pvc *v1.PersistentVolumeClaim) (attachedVolume, bool) {
	if name := pvc.Spec.VolumeName; name != "" {
		if pv := snap.PersistentVolume(name); pv != nil {
			if csi := pv.Spec.CSI; csi != nil && csi.Driver != "" && csi.VolumeHandle != "" {
				return attachedVolume{driver: csi.Driver, handle: csi.VolumeHandle}, true
			}
			return attachedVolume{}, false
		}
	}
	class := claimClass(pvc)
	if class == "" {
		return attachedVolume{}, false
	}
	sc := snap.StorageClass(class)
	if sc == nil || sc.Provisioner == "" {
		return attachedVolume{}, false
	}
	driver := sc.Provisioner
	if d, ok := inTreeDrivers[driver]; ok {
		driver = d
	} else if driver == "kubernetes.io/portworx-volume" {
		// Migrated only behind a feature gate that is off by default.
		return attachedVolume{}, false
	}
	return attachedVolume{driver: driver, handle: "claim:" + pvc.Namespace + "/" + pvc.Name}, true
}

// checkVolumeLimits is NodeVolumeLimits' Filter: for every driver with an
// attach limit on the node's CSINode, the volumes of the node's pods plus
// the pod's volumes not attached yet must stay within the limit. A node
// without a CSINode has no limits.
func (pc *PodCheck) checkVolumeLimits(ni *snapshot.NodeInfo) Result {
	l := &pc.vol.limits
	if len(l.volumes) == 0 {
		return Result{}
	}
	cn := pc.checker.snap.CSINode(ni.Node.Name)
	if cn == nil || !limitsAny(cn, l.volumes) {
		return Result{}
	}
	if l.seen == nil {
		l.seen = map[attachedVolume]struct{}{}
	}
	clear(l.seen)
	for _, pi := range ni.Pods {
		l.scratch = appendAttachable(l.scratch[:0], pc.checker.snap, pi.Pod)
		for _, av := range l.scratch {
			l.seen[av] = struct{}{}
		}
	}
	for i := range cn.Spec.Drivers {
		d := &cn.Spec.Drivers[i]
		if d.Allocatable == nil || d.Allocatable.Count == nil {
			continue
		}
		if r := l.checkDriver(d.Name, int64(*d.Allocatable.Count)); !r.Fits() {
			return r
		}
	}
	return Result{}
}

// checkDriver compares one driver's attached and new volumes with its limit.
func (l *limitState) checkDriver(driver string, limit int64) Result {
	var attached, wanted int64
	for av := range l.seen {
		if av.driver == driver {
			attached++
		}
	}
	for _, av := range l.volumes {
		if _, ok := l.seen[av]; !ok && av.driver == driver {
			wanted++
		}
	}
	if wanted > 0 && attached+wanted > limit {
		return Result{Predicate: NodeVolumeLimits, Reason: ReasonVolumeLimit, Detail: driver,
			Used: attached, Allocatable: limit, Wanted: wanted}
	}
	return Result{}
}

// limitsAny: the CSINode limits a driver of one of the pod's volumes.
func limitsAny(cn *storagev1.CSINode, vs []attachedVolume) bool {
	for i := range cn.Spec.Drivers {
		d := &cn.Spec.Drivers[i]
		if d.Allocatable == nil || d.Allocatable.Count == nil {
			continue
		}
		for _, av := range vs {
			if av.driver == d.Name {
				return true
			}
		}
	}
	return false
}
