package capacitybuffer

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons of the conditions gpuscale writes.
const (
	ReasonResolved         = "BufferResolved"
	ReasonResolveFailed    = "BufferInvalid"
	ReasonCapacityHeld     = "CapacityHeld"
	ReasonCapacityPartial  = "CapacityPartiallyHeld"
	ReasonInjectionOff     = "PodInjectionDisabled"
	ReasonNoChunks         = "NoChunks"
	ReasonNotPlanned       = "NotPlanned"
	ReasonNotReady         = "NotReadyForProvisioning"
	MsgInjectionOff        = "placeholder pods are not injected (--capacity-buffer-pod-injection-enabled=false)"
	fieldManager           = "cluster-autoscaler"
	conditionMessageLength = 1024
)

// FieldManager is the field manager status writes use, upstream's.
const FieldManager = fieldManager

// ResolvedStatus is the status the buffer controller writes after
// resolving b: the template used, the chunks, the strategy, and
// ReadyForProvisioning with why. Other conditions are kept.
func ResolvedStatus(b *CapacityBuffer, r Resolution, err error, stamp metav1.Time) Status {
	st := b.Status
	st.Conditions = slices.Clone(st.Conditions)
	strategy := b.Strategy()
	st.ProvisioningStrategy = &strategy
	c := metav1.Condition{Type: ReadyForProvisioning, ObservedGeneration: b.Generation, LastTransitionTime: stamp}
	if err != nil {
		st.PodTemplateRef, st.Replicas, st.PodTemplateGeneration = nil, nil, nil
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonResolveFailed, cut(err.Error())
	} else {
		n := r.Buffer.Replicas
		st.Replicas = &n
		st.PodTemplateRef, st.PodTemplateGeneration = nil, r.TemplateGeneration
		if r.TemplateName != "" {
			st.PodTemplateRef = &LocalObjectRef{Name: r.TemplateName}
		}
		c.Status, c.Reason = metav1.ConditionTrue, ReasonResolved
		c.Message = fmt.Sprintf("%d chunk(s) of the pod template to hold", n)
	}
	meta.SetStatusCondition(&st.Conditions, c)
	return st
}

// Held is what a loop did with one buffer's placeholder pods: how many
// fit on nodes that exist or are coming, how many a scale-up of this loop
// is for, and how many found no room (with why).
type Held struct {
	Key      string
	Replicas int
	Fit      int
	ScaleUp  int
	NoRoom   int
	Why      string
}

// ProvisioningCondition is the Provisioning condition after a loop.
func ProvisioningCondition(h Held, generation int64, stamp metav1.Time) metav1.Condition {
	c := metav1.Condition{Type: Provisioning, ObservedGeneration: generation, LastTransitionTime: stamp}
	switch {
	case h.Fit+h.ScaleUp+h.NoRoom < h.Replicas:
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonNotPlanned
		c.Message = "the loop did not plan scale-up (see the autoscaler's status for why)"
	case h.Replicas == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonNoChunks, "the buffer holds no chunks"
	case h.NoRoom == 0:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonCapacityHeld
		c.Message = fmt.Sprintf("%d of %d chunk(s) have room on nodes, %d on nodes being added", h.Fit, h.Replicas, h.ScaleUp)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonCapacityPartial
		c.Message = cut(fmt.Sprintf("%d of %d chunk(s) found no room: %s", h.NoRoom, h.Replicas, h.Why))
	}
	return c
}

// NotProvisioningCondition is the Provisioning condition of a buffer the
// autoscaler no longer plans with (not ready for provisioning).
func NotProvisioningCondition(generation int64, stamp metav1.Time) metav1.Condition {
	return metav1.Condition{Type: Provisioning, Status: metav1.ConditionFalse, Reason: ReasonNotReady, ObservedGeneration: generation,
		LastTransitionTime: stamp, Message: "the buffer is not ready for provisioning (see ReadyForProvisioning): it holds no room"}
}

func cut(s string) string {
	if len(s) <= conditionMessageLength {
		return s
	}
	return s[:conditionMessageLength-3] + "..."
}
