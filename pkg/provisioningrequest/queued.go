package provisioningrequest

import (
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ParamMaxRunDurationSeconds bounds how long the nodes of a queued request
// live (spec.parameters, in whole seconds, at most seven days): the cloud
// deletes them when it ends. Absent: the cloud's default (seven days on
// GKE).
const ParamMaxRunDurationSeconds = "maxRunDurationSeconds"

// MaxRunDuration is the longest run a queued request may ask for.
const MaxRunDuration = 7 * 24 * time.Hour

// Reasons of the queued class's conditions.
const (
	// ReasonCapacityIsQueued (Provisioned=False): the cloud holds the
	// request in its queue; it is not retried, the cloud answers it.
	ReasonCapacityIsQueued = "CapacityIsQueued"
	// ReasonQueuedRequestFailed (Failed=True): the cloud failed or
	// cancelled the queued request.
	ReasonQueuedRequestFailed = "QueuedRequestFailed"
	// ReasonInvalidParameters (Failed=True): a parameter cannot be served.
	ReasonInvalidParameters = "InvalidParameters"
)

// Queued reports whether the request is of the queued class.
func Queued(r *ProvisioningRequest) bool {
	return r.Spec.ProvisioningClassName == ClassQueuedProvisioning
}

// Waiting reports whether a queued request waits for the cloud's queue:
// its queued request was made (Provisioned=False, CapacityIsQueued) and it
// is not done.
func Waiting(r *ProvisioningRequest) bool {
	p := r.Condition(Provisioned)
	return Queued(r) && p != nil && p.Status == metav1.ConditionFalse && p.Reason == ReasonCapacityIsQueued && !Done(r)
}

// QueuedName is the name of the cloud's queued request made for r: one per
// request (its UID), so that asking again after a restart finds the first
// one. It is a valid Compute Engine resource name.
func QueuedName(r *ProvisioningRequest) string {
	return "pr-" + string(r.UID)
}

// RunDuration reads ParamMaxRunDurationSeconds: 0 when absent, an error
// naming the parameter and its value when it is not a whole number of
// seconds from 1 to seven days.
func RunDuration(r *ProvisioningRequest) (time.Duration, error) {
	v, ok := r.Spec.Parameters[ParamMaxRunDurationSeconds]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || time.Duration(n)*time.Second > MaxRunDuration {
		return 0, fmt.Errorf("spec.parameters.%s=%q: want a whole number of seconds from 1 to %d", ParamMaxRunDurationSeconds, v,
			int64(MaxRunDuration/time.Second))
	}
	return time.Duration(n) * time.Second, nil
}
