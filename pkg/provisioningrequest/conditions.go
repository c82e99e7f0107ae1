package provisioningrequest

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types. Provisioned, Failed, BookingExpired and Accepted are the
// ones the upstream Cluster Autoscaler writes and Kueue reads.
// CapacityAvailable is the check-capacity condition of the upstream
// proposal; upstream's code reports check-capacity through Provisioned, and
// so does gpuscale, writing CapacityAvailable beside it.
const (
	Accepted          = "Accepted"
	Provisioned       = "Provisioned"
	Failed            = "Failed"
	BookingExpired    = "BookingExpired"
	CapacityAvailable = "CapacityAvailable"
)

// Reasons, as upstream spells them.
const (
	ReasonAccepted                       = "Accepted"
	ReasonCapacityIsFound                = "CapacityIsFound"
	ReasonCapacityIsNotFound             = "CapacityIsNotFound"
	ReasonCapacityIsProvisioned          = "CapacityIsProvisioned"
	ReasonFailedToCreatePods             = "FailedToCreatePods"
	ReasonCapacityReservationTimeExpired = "CapacityReservationTimeExpired"
	ReasonCapacityBookingConsumed        = "CapacityBookingConsumed"
	ReasonExpired                        = "Expired"
	// ReasonNotServed: the class is one this autoscaler does not serve; the
	// request is left alone (no condition is written with it).
	ReasonNotServed = "ProvisioningClassNotServed"
)

// Messages of the fixed cases, as upstream words them (people and alerts
// match on them); the not-found messages add why.
const (
	MsgAccepted                       = "ProvisioningRequest is accepted by ClusterAutoscaler"
	MsgCapacityIsFound                = "Capacity is found in the cluster"
	MsgCapacityIsProvisioned          = "Capacity is found in the cluster"
	MsgCapacityIsNotFound             = "Capacity is not found, CA will try to find it later."
	MsgCapacityNotFoundNoRetry        = "CA could not find requested capacity"
	MsgCapacityReservationTimeExpired = "Capacity reservation time is expired"
	MsgCapacityBookingConsumed        = "Capacity booking consumed: all pods scheduled"
	MsgExpired                        = "ProvisioningRequest is expired"
)

// NewCondition is a condition of the request's current generation that
// changed at now.
func NewCondition(r *ProvisioningRequest, typ string, status metav1.ConditionStatus, reason, message string, now metav1.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, ObservedGeneration: r.Generation, LastTransitionTime: now,
		Reason: reason, Message: message}
}

// IsTrue reports whether the condition of type typ is True.
func (r *ProvisioningRequest) IsTrue(typ string) bool {
	return meta.IsStatusConditionTrue(r.Status.Conditions, typ)
}

// Condition returns the condition of type typ, nil when absent.
func (r *ProvisioningRequest) Condition(typ string) *metav1.Condition {
	return meta.FindStatusCondition(r.Status.Conditions, typ)
}

// SetConditions replaces the conditions of the same types as cs (their
// LastTransitionTime as given: upstream stamps every write, and the retry
// backoff counts from the last attempt) and appends the others.
func SetConditions(existing []metav1.Condition, cs ...metav1.Condition) []metav1.Condition {
	out := append([]metav1.Condition(nil), existing...)
	for _, c := range cs {
		found := false
		for i := range out {
			if out[i].Type == c.Type {
				out[i], found = c, true
				break
			}
		}
		if !found {
			out = append(out, c)
		}
	}
	return out
}
