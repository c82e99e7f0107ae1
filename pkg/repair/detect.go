package repair

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// Why a node is unhealthy (Node.Reason).
const (
	// ReasonCondition: one of the repair conditions holds.
	ReasonCondition = "UnhealthyCondition"
	// ReasonGPUsMissing: fewer accelerators are allocatable than the node
	// has, or than its group's template promises past its start-up time.
	ReasonGPUsMissing = "GPUsMissing"
)

// finding is why one node is unhealthy and since when.
type finding struct {
	reason    string
	condition string
	message   string
	since     time.Time
	after     time.Duration
}

// inspect says whether a node is unhealthy: the first repair condition
// that holds, in the options' order, else missing accelerators. seen is
// when the loop first found it unhealthy (zero: now), the start of the
// clock for signals that carry no time of their own.
func (o Options) inspect(node *v1.Node, state clusterstate.NodeState, seen, now time.Time) (finding, bool) {
	if seen.IsZero() {
		seen = now
	}
	for _, want := range o.Conditions {
		for i := range node.Status.Conditions {
			c := &node.Status.Conditions[i]
			if c.Type != want.Type || c.Status != want.Status {
				continue
			}
			since := c.LastTransitionTime.Time
			if since.IsZero() {
				since = seen
			}
			msg := fmt.Sprintf("condition %s=%s since %s", c.Type, c.Status, since.UTC().Format(time.RFC3339))
			if c.Reason != "" || c.Message != "" {
				msg += fmt.Sprintf(" (%s)", strings.TrimSpace(c.Reason+": "+c.Message))
			}
			return finding{reason: ReasonCondition, condition: fmt.Sprintf("%s=%s", c.Type, c.Status), message: msg,
				since: since, after: want.After}, true
		}
	}
	if o.MissingGPUsAfter <= 0 {
		return finding{}, false
	}
	if short := shortGPUs(node); short != "" {
		return finding{reason: ReasonGPUsMissing, message: short, since: seen, after: o.MissingGPUsAfter}, true
	}
	if state == clusterstate.NodeDevicesOverdue {
		return finding{reason: ReasonGPUsMissing, since: seen, after: o.MissingGPUsAfter,
			message: "its group's template promises accelerators the node does not advertise, past --max-node-startup-time"}, true
	}
	return finding{}, false
}

// shortGPUs names the accelerator resources whose allocatable is below
// their capacity: the device plugin took failed devices away. "" when
// none is.
func shortGPUs(node *v1.Node) string {
	var out []string
	for name, capacity := range node.Status.Capacity {
		if !gpu.IsGPUResource(name) {
			continue
		}
		alloc := node.Status.Allocatable[name]
		if alloc.Cmp(capacity) < 0 {
			out = append(out, fmt.Sprintf("%s allocatable %s of capacity %s", name, alloc.String(), capacity.String()))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
