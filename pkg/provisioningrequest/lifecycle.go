package provisioningrequest

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Options are the ProvisioningRequest settings, with upstream's defaults.
type Options struct {
	// Enabled serves ProvisioningRequests (--enable-provisioning-requests).
	Enabled bool
	// InitialBackoff and MaxBackoff space the attempts of a request that
	// found no capacity: the first retry after InitialBackoff, each next
	// one twice as late, at most MaxBackoff
	// (--provisioning-request-initial-backoff-time 1m,
	// --provisioning-request-max-backoff-time 10m).
	InitialBackoff, MaxBackoff time.Duration
	// BookingTime is how long capacity found or added for a request is
	// held for its pods (upstream: 10 minutes, not configurable there;
	// --provisioning-request-booking-time here).
	BookingTime time.Duration
	// ExpiryTime: a request never provisioned this long after its creation
	// fails (upstream: 7 days; --provisioning-request-expiry-time here).
	ExpiryTime time.Duration
	// ProcessorInstance, when set, serves only check-capacity requests
	// whose "processorInstance" parameter names it, and no atomic ones
	// (--check-capacity-processor-instance).
	ProcessorInstance string
}

// DefaultOptions are upstream's: off, backoff 1m to 10m, booking 10m,
// expiry 7 days.
func DefaultOptions() Options {
	return Options{InitialBackoff: time.Minute, MaxBackoff: 10 * time.Minute, BookingTime: 10 * time.Minute,
		ExpiryTime: 7 * 24 * time.Hour}
}

// Validate names the first setting that cannot work.
func (o Options) Validate() error {
	switch {
	case o.InitialBackoff <= 0:
		return fmt.Errorf("--provisioning-request-initial-backoff-time: must be positive, got %s", o.InitialBackoff)
	case o.MaxBackoff < o.InitialBackoff:
		return fmt.Errorf("--provisioning-request-max-backoff-time: must be at least the initial backoff %s, got %s", o.InitialBackoff, o.MaxBackoff)
	case o.BookingTime <= 0:
		return fmt.Errorf("--provisioning-request-booking-time: must be positive, got %s", o.BookingTime)
	case o.ExpiryTime <= 0:
		return fmt.Errorf("--provisioning-request-expiry-time: must be positive, got %s", o.ExpiryTime)
	}
	return nil
}

// Serves reports whether this autoscaler handles the request's class.
func (o Options) Serves(r *ProvisioningRequest) bool {
	inst := r.Spec.Parameters[ParamProcessorInstance]
	switch r.Spec.ProvisioningClassName {
	case ClassBestEffortAtomicScaleUp, ClassQueuedProvisioning:
		return o.ProcessorInstance == ""
	case ClassCheckCapacity:
		return inst == o.ProcessorInstance
	}
	return false
}

// Done reports whether the request's life is over: it failed, or its
// booking expired or was used up.
func Done(r *ProvisioningRequest) bool {
	return r.IsTrue(Failed) || r.IsTrue(BookingExpired)
}

// Booked reports whether the request holds capacity: provisioned and not
// done. The planner keeps room for its pods that have not yet started.
func Booked(r *ProvisioningRequest) bool {
	return r.IsTrue(Provisioned) && !Done(r)
}

// Expiry is the condition that ends a request at now, if one does: a
// booking older than BookingTime expires; a request never provisioned
// ExpiryTime after its creation fails. Consumed counts the request's pods
// already running (or bound): once all are, the booking is used up.
func (o Options) Expiry(r *ProvisioningRequest, consumed int, now time.Time) (metav1.Condition, bool) {
	if Done(r) {
		return metav1.Condition{}, false
	}
	t := metav1.NewTime(now)
	if p := r.Condition(Provisioned); p != nil && p.Status == metav1.ConditionTrue {
		switch {
		case consumed >= r.PodCount():
			return NewCondition(r, BookingExpired, metav1.ConditionTrue, ReasonCapacityBookingConsumed, MsgCapacityBookingConsumed, t), true
		case p.LastTransitionTime.Add(o.BookingTime).Before(now):
			return NewCondition(r, BookingExpired, metav1.ConditionTrue, ReasonCapacityReservationTimeExpired,
				MsgCapacityReservationTimeExpired, t), true
		}
		return metav1.Condition{}, false
	}
	if r.CreationTimestamp.Add(o.ExpiryTime).Before(now) {
		return NewCondition(r, Failed, metav1.ConditionTrue, ReasonExpired, MsgExpired, t), true
	}
	return metav1.Condition{}, false
}

// Due reports whether the request is to be tried at now: never tried, or
// found no capacity and has waited retry since (Provisioned=False's
// LastTransitionTime).
func Due(r *ProvisioningRequest, retry time.Duration, now time.Time) bool {
	if Done(r) {
		return false
	}
	p := r.Condition(Provisioned)
	switch {
	case p == nil:
		return true
	case p.Status != metav1.ConditionFalse:
		return false
	}
	return p.LastTransitionTime.Add(retry).Before(now)
}

// RetryAt is when a request that found no capacity is tried again.
func RetryAt(r *ProvisioningRequest, retry time.Duration) time.Time {
	p := r.Condition(Provisioned)
	if p == nil || p.Status != metav1.ConditionFalse || Done(r) {
		return time.Time{}
	}
	return p.LastTransitionTime.Add(retry)
}

// NoRetry reports whether a check-capacity request asks to fail rather
// than be retried ("noRetry": "true").
func NoRetry(r *ProvisioningRequest) bool {
	return r.Spec.ProvisioningClassName == ClassCheckCapacity && r.Spec.Parameters[ParamNoRetry] == "true"
}

// Request is a request with the PodTemplates its pod sets name that
// exist, by name: what the core needs to know of it.
type Request struct {
	*ProvisioningRequest
	Templates map[string]*v1.PodTemplate `json:"templates,omitempty"`
}
