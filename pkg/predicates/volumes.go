package predicates

import "github.com/gpuscale/gpuscale/pkg/snapshot"

// volumeState is what the volume plugins (VolumeRestrictions,
// NodeVolumeLimits, VolumeBinding, VolumeZone) need of a pod that mounts
// claims or in-tree disks. It hangs off the PodCheck by one pointer, so
// that the pods without volumes, most of a GPU cluster, carry none of it.
type volumeState struct {
	// claims: the pod mounts a claim or a generic ephemeral volume;
	// restricted: a claim or an in-tree disk; limited: a claim or an
	// in-tree disk that counts against a CSI driver's attach limit.
	claims, restricted, limited bool
	restrict                    restrictionState
	limits                      limitState
	binding                     bindingState
	zones                       []volumeTopology
}

// prepareVolumeState runs the volume plugins' PreFilters in the
// scheduler's order.
func (pc *PodCheck) prepareVolumeState() Result {
	v := pc.vol
	if v.restricted {
		if r := pc.prepareRestrictions(); !r.Fits() {
			return r
		}
	}
	if v.limited {
		pc.prepareLimits()
	}
	if !v.claims {
		return Result{}
	}
	v.zones = v.zones[:0]
	if r := pc.prepareBinding(); !r.Fits() {
		return r
	}
	return pc.prepareVolumes()
}

// checkVolumes runs the volume plugins' Filters in the scheduler's order.
func (pc *PodCheck) checkVolumes(ni *snapshot.NodeInfo) Result {
	v := pc.vol
	if v.restricted {
		if r := pc.checkRestrictions(ni); !r.Fits() {
			return r
		}
	}
	if v.limited {
		if r := pc.checkVolumeLimits(ni); !r.Fits() {
			return r
		}
	}
	if !v.claims {
		return Result{}
	}
	if r := pc.checkBinding(ni); !r.Fits() {
		return r
	}
	return pc.checkVolumeZone(ni)
}
