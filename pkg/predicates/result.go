package predicates

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Predicate names the kube-scheduler filter plugin a check mirrors.
type Predicate uint8

// The checks, in the order kube-scheduler's default profile runs its filters.
const (
	Fits Predicate = iota
	NodeUnschedulable
	NodeName
	TaintToleration
	NodeAffinity
	NodePorts
	NodeResourcesFit
	VolumeRestrictions
	NodeVolumeLimits
	VolumeBinding
	VolumeZone
	PodTopologySpread
	InterPodAffinity
	DynamicResources
)

var predicateNames = [...]string{"", "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
	"NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources"}

func (p Predicate) String() string { return predicateNames[p] }

// Reason tells which rule of a predicate failed.
type Reason uint8

// Reasons, one per distinct message.
const (
	ReasonNone Reason = iota
	ReasonUnschedulable
	ReasonNodeName
	ReasonTaint
	ReasonNodeAffinity
	ReasonHostPort
	ReasonTooManyPods
	ReasonInsufficient
	ReasonVolumeZone
	ReasonVolumeUnresolvable
	ReasonSpreadMissingLabel
	ReasonSpreadSkew
	ReasonAffinity
	ReasonAntiAffinity
	ReasonExistingAntiAffinity
	ReasonInvalidPod
	ReasonClaimUnavailable
	ReasonClaimNotOnNode
	ReasonCannotAllocate
	ReasonInvalidClaim
	ReasonVolumeNodeAffinity
	ReasonVolumeBindConflict
	ReasonReadWriteOncePod
	ReasonDiskConflict
	ReasonVolumeLimit
)

// Result is the outcome of checking one pod against one node. The zero
// Result means the pod fits. It is a plain value so that checking allocates
// nothing; Message builds the text only when someone reads it.
type Result struct {
	Predicate Predicate
	Reason    Reason
	// Resource, Wanted, Used and Allocatable describe an insufficient
	// resource, a full pod count, or (Wanted only) a host port.
	Resource    v1.ResourceName
	Wanted      int64
	Used        int64
	Allocatable int64
	// Detail is the taint, topology key, volume or protocol involved.
	Detail string
	// Detail2 is a second value where one is needed.
	Detail2 string
	// Taint is the untolerated taint (it points into the node's spec).
	Taint *v1.Taint
}

// Fits reports whether the pod fits.
func (r Result) Fits() bool { return r.Predicate == Fits }

// String describes the result with the word "node" for the node.
func (r Result) String() string { return r.Message("node") }

// Message describes the result for people; subject names what was checked,
// for example "node" or "template".
func (r Result) Message(subject string) string {
	switch r.Reason {
	case ReasonNone:
		return "fits"
	case ReasonUnschedulable:
		return subject + " is marked unschedulable"
	case ReasonNodeName:
		return fmt.Sprintf("pod asks for node %s", r.Detail)
	case ReasonTaint:
		return fmt.Sprintf("%s has taint %s that the pod does not tolerate", subject, r.Taint.ToString())
	case ReasonNodeAffinity:
		return subject + " does not match the pod's node selector or required node affinity"
	case ReasonHostPort:
		return fmt.Sprintf("host port %s/%d is already in use on %s", r.Detail, r.Wanted, subject)
	case ReasonTooManyPods:
		return fmt.Sprintf("Too many pods (%s has %d of %d)", subject, r.Used, r.Allocatable)
	case ReasonInsufficient:
		w := snapshot.FormatAmount(r.Resource, r.Wanted)
		a := snapshot.FormatAmount(r.Resource, r.Allocatable)
		if r.Used == 0 {
			return fmt.Sprintf("Insufficient %s (wants %s, %s has %s)", r.Resource, w, subject, a)
		}
		free := snapshot.FormatAmount(r.Resource, r.Allocatable-r.Used)
		return fmt.Sprintf("Insufficient %s (wants %s, %s has %s free of %s)", r.Resource, w, subject, free, a)
	case ReasonVolumeZone:
		return fmt.Sprintf("%s is not in the topology of volume %s (%s)", subject, r.Detail, r.Detail2)
	case ReasonVolumeNodeAffinity:
		return fmt.Sprintf("%s is outside the node affinity of %s, which needs %s", subject, r.Detail, r.Detail2)
	case ReasonReadWriteOncePod:
		return fmt.Sprintf("PersistentVolumeClaim %s is ReadWriteOncePod and pod %s uses it", r.Detail, r.Detail2)
	case ReasonDiskConflict:
		return fmt.Sprintf("volume %s: pod %s on %s mounts the same disk", r.Detail, r.Detail2, subject)
	case ReasonVolumeLimit:
		return fmt.Sprintf("%s has %d of %d %s volumes attached and the pod needs %d more", subject, r.Used, r.Allocatable, r.Detail, r.Wanted)
	case ReasonVolumeBindConflict:
		return fmt.Sprintf("%s cannot bind %s: %s", subject, r.Detail, r.Detail2)
	case ReasonVolumeUnresolvable, ReasonInvalidPod:
		return r.Detail
	case ReasonSpreadMissingLabel:
		return fmt.Sprintf("%s lacks label %s named by a topology spread constraint", subject, r.Detail)
	case ReasonSpreadSkew:
		return fmt.Sprintf("topology spread on %s: placing the pod here gives skew %d, over maxSkew %d", r.Detail, r.Wanted, r.Allocatable)
	case ReasonAffinity:
		return fmt.Sprintf("no pod matching the pod's required affinity in %s's %s domain", subject, r.Detail)
	case ReasonAntiAffinity:
		return fmt.Sprintf("a pod matching the pod's required anti-affinity is in %s's %s domain", subject, r.Detail)
	case ReasonExistingAntiAffinity:
		return fmt.Sprintf("the required anti-affinity of a pod in %s's %s domain excludes this pod", subject, r.Detail)
	case ReasonClaimUnavailable:
		return r.Detail
	case ReasonClaimNotOnNode:
		return fmt.Sprintf("a resource claim of the pod is allocated to devices %s cannot reach", subject)
	case ReasonCannotAllocate:
		if r.Detail != "" {
			return fmt.Sprintf("%s cannot satisfy the pod's resource claims: %s", subject, r.Detail)
		}
		return fmt.Sprintf("%s cannot satisfy the pod's resource claims (no matching free devices)", subject)
	case ReasonInvalidClaim:
		return "the pod's resource claims cannot be allocated anywhere: " + r.Detail
	}
	return r.Predicate.String()
}
