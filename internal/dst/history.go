package dst

import (
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// EventKind is what an Event records.
type EventKind string

// Event kinds.
const (
	// EventAPIWrite is a write of an autoscaler instance to the API server.
	EventAPIWrite EventKind = "api-write"
	// EventPodDeletedDirectly is a pod DELETE by an autoscaler instance.
	EventPodDeletedDirectly EventKind = "pod-deleted-directly"
	// EventPodEvicted is an eviction the API server granted.
	EventPodEvicted EventKind = "pod-evicted"
	// EventCloudWrite is a mutating cloud call of an instance.
	EventCloudWrite EventKind = "cloud-write"
	// EventScaleUp is an IncreaseSize the cloud carried out, with what
	// the cluster looked like then.
	EventScaleUp EventKind = "scale-up"
	// EventNodeDeleted is an instance the cloud deleted, with the pods its
	// node still held.
	EventNodeDeleted EventKind = "node-deleted"
	// EventLeading is an instance starting to act (after a start or a
	// takeover).
	EventLeading EventKind = "leading"
)

// Event is one fact of a run.
type Event struct {
	Step     int
	At       time.Time
	Instance string
	Kind     EventKind
	Verb     string
	Resource string
	Object   string
	Result   string
	// Deposed marks a call of an instance that no longer holds the Lease.
	Deposed bool
	// Pods are the pods concerned (evicted, or left on a deleted node).
	Pods []PodFact
	// ScaleUp facts (EventScaleUp).
	Group                         string
	Delta, Pending, Upcoming      int
	InstancesAfter, MaxNodesTotal int
	GPUsAfter, MaxGPUs            int
}

// PodFact is what the invariants need to know of a pod.
type PodFact struct {
	Name string
	// MayNotMove is why the pod may not be moved, "" when it may.
	MayNotMove string
	// Terminating pods are in their grace period.
	Terminating bool
	// Terminal pods have finished.
	Terminal bool
}

func factOf(p *v1.Pod) PodFact {
	return PodFact{Name: podKey(p), MayNotMove: mayNotMove(p), Terminating: p.DeletionTimestamp != nil,
		Terminal: p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed}
}

// mayNotMove names why a pod must not be moved, as the default drain rules
// judge it from the pod alone ("" when it may move). Budgets are the API
// server's to enforce at eviction.
func mayNotMove(p *v1.Pod) string {
	switch {
	case p.Annotations[drain.AnnotationDoNotDisrupt] == "true":
		return "do-not-disrupt"
	case p.Annotations[drain.AnnotationSafeToEvict] == "false":
		return "safe-to-evict=false"
	case metav1.GetControllerOf(p) == nil:
		return "unreplicated"
	}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			return "local storage"
		}
	}
	return ""
}

// Observation is the cluster as it stands after a step.
type Observation struct {
	Step int
	At   time.Time
	// Taints are the ToBeDeleted taints on nodes: node -> value (the
	// Unix time the taint was put).
	Taints map[string]string
	// TaintedBy names the instance that wrote each of those taints, where
	// the API server model saw the write.
	TaintedBy map[string]string
	// Leader is the instance that holds the Lease, StartedAt when it
	// started; FaultAfterStart is when a fault first met a call (of any
	// instance) at or after StartedAt, zero when none has.
	Leader          string
	StartedAt       time.Time
	FaultAfterStart time.Time
	// FaultsOver reports that no fault is armed any more and the schedule
	// has reached its quiet tail.
	FaultsOver bool
	// In the quiet tail: Unbound are the pods that have waited longer
	// than Options.PodWaitBound of it with room in the cloud for them, and
	// Stuck the nodes (as node=taint value) marked ToBeDeleted for longer
	// than Options.RemovalBound of it. Idle, at the last observation, are
	// the nodes that held no pod for the tail's second half.
	Unbound []string
	Stuck   []string
	Idle    []string
	// Final marks the last observation of the run.
	Final bool
}

// History is everything a run did, in order.
type History struct {
	mu     sync.Mutex
	Events []Event
	Obs    []Observation
}

func (h *History) add(e Event) {
	h.mu.Lock()
	h.Events = append(h.Events, e)
	h.mu.Unlock()
}

func (h *History) observe(o Observation) {
	h.mu.Lock()
	h.Obs = append(h.Obs, o)
	h.mu.Unlock()
}

// eventsOf are the events of one step.
func (h *History) eventsOf(step int) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Event
	for i := len(h.Events) - 1; i >= 0 && h.Events[i].Step >= step; i-- {
		if h.Events[i].Step == step {
			out = append(out, h.Events[i])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// last is the latest observation.
func (h *History) last() (Observation, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.Obs) == 0 {
		return Observation{}, false
	}
	return h.Obs[len(h.Obs)-1], true
}

func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %d %s %s", e.Step, e.At.Format("15:04:05"), e.Kind)
	if e.Instance != "" {
		fmt.Fprintf(&b, " by %s", e.Instance)
		if e.Deposed {
			b.WriteString(" (deposed)")
		}
	}
	if e.Verb != "" {
		fmt.Fprintf(&b, " %s %s/%s -> %s", e.Verb, e.Resource, e.Object, e.Result)
	} else if e.Object != "" {
		fmt.Fprintf(&b, " %s", e.Object)
	}
	if e.Kind == EventScaleUp {
		fmt.Fprintf(&b, " group %s +%d (pending %d, upcoming %d, instances after %d)", e.Group, e.Delta, e.Pending,
			e.Upcoming, e.InstancesAfter)
	}
	for _, p := range e.Pods {
		fmt.Fprintf(&b, " [%s", p.Name)
		if p.MayNotMove != "" {
			fmt.Fprintf(&b, " may-not-move:%s", p.MayNotMove)
		}
		if p.Terminating {
			b.WriteString(" terminating")
		}
		b.WriteString("]")
	}
	return b.String()
}
