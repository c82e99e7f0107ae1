package gce

import (
	"sort"

	compute "google.golang.org/api/compute/v1"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
)

// Managed-instance actions that mean "not created yet": the MIG keeps
// retrying these until it succeeds or the target is lowered.
const (
	actionCreating          = "CREATING"
	actionCreatingNoRetries = "CREATING_WITHOUT_RETRIES"
)

// Creation error codes of the MIG's lastAttempt that have a class of
// their own; every other code is ErrorOther.
const (
	CodeZoneResourcePoolExhausted            = "ZONE_RESOURCE_POOL_EXHAUSTED"
	CodeZoneResourcePoolExhaustedWithDetails = "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"
	CodeQuotaExceeded                        = "QUOTA_EXCEEDED"
)

// classify maps a creation error code to a FailedCreations class.
func classify(code string) string {
	switch code {
	case CodeZoneResourcePoolExhausted, CodeZoneResourcePoolExhaustedWithDetails:
		return cloudprovider.ErrorOutOfResources
	case CodeQuotaExceeded:
		return cloudprovider.ErrorQuota
	}
	return cloudprovider.ErrorOther
}

func isPendingCreation(mi *compute.ManagedInstance) bool {
	return mi.CurrentAction == actionCreating || mi.CurrentAction == actionCreatingNoRetries
}

// creationError is the first error of an instance's last creation attempt,
// or ok false when it has none or is not being created.
func creationError(mi *compute.ManagedInstance) (code, message string, ok bool) {
	if !isPendingCreation(mi) || mi.LastAttempt == nil || mi.LastAttempt.Errors == nil {
		return "", "", false
	}
	for _, e := range mi.LastAttempt.Errors.Errors {
		if e != nil && e.Code != "" {
			return e.Code, e.Message, true
		}
	}
	return "", "", false
}

// failureTracker remembers which instance failures were reported, so that
// an instance the MIG keeps retrying with the same error counts once.
type failureTracker struct {
	// reported holds group -> instance name -> error code.
	reported map[string]map[string]string
	// due are the failures seen since FailedCreations last ran.
	due []cloudprovider.FailedCreations
}

type instanceFailure struct {
	instance, code, message string
}

// observe takes a group's failing instances as listed now and queues the
// new ones, one FailedCreations per error code, sorted by code.
func (t *failureTracker) observe(group string, failing []instanceFailure) {
	if t.reported == nil {
		t.reported = map[string]map[string]string{}
	}
	old := t.reported[group]
	now := make(map[string]string, len(failing))
	byCode := map[string]*cloudprovider.FailedCreations{}
	sort.Slice(failing, func(i, j int) bool { return failing[i].instance < failing[j].instance })
	for _, f := range failing {
		now[f.instance] = f.code
		if old[f.instance] == f.code {
			continue
		}
		fc := byCode[f.code]
		if fc == nil {
			fc = &cloudprovider.FailedCreations{Group: group, Class: classify(f.code), Code: f.code, Message: f.message}
			byCode[f.code] = fc
		}
		fc.Count++
	}
	t.reported[group] = now
	codes := make([]string, 0, len(byCode))
	for c := range byCode {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		t.due = append(t.due, *byCode[c])
	}
}

// forget drops a group no longer served.
func (t *failureTracker) forget(group string) { delete(t.reported, group) }

// take returns and clears the queued failures.
func (t *failureTracker) take() []cloudprovider.FailedCreations {
	out := t.due
	t.due = nil
	return out
}
