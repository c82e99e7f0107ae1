package status

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Key is the ConfigMap key holding the document, as upstream writes it.
const Key = "status"

// Document is the text of the cluster-autoscaler-status ConfigMap: the
// upstream Cluster Autoscaler's layout field for field (time,
// autoscalerStatus, clusterWide and nodeGroups with health, scaleUp and
// scaleDown conditions, node counts, probe and transition times, backoff
// info), so dashboards and scripts that read it keep working, followed by
// gpuscale's own lists: the scale-ups of the last loop with the options
// the expanders weighed, why pending pods did not trigger a scale-up, and
// why nodes stay. Lists are cut to fit the ConfigMap (see Render).
type Document struct {
	Time             string            `json:"time,omitempty"`
	AutoscalerStatus string            `json:"autoscalerStatus,omitempty"`
	Message          string            `json:"message,omitempty"`
	ClusterWide      ClusterWideStatus `json:"clusterWide,omitempty"`
	NodeGroups       []NodeGroupStatus `json:"nodeGroups,omitempty"`

	// SafeToAutoscale is false while the health brake holds (upstream's
	// cluster_safe_to_autoscale metric, kept here too).
	SafeToAutoscale bool      `json:"safeToAutoscale"`
	ScaleUps        []ScaleUp `json:"scaleUps,omitempty"`
	// PendingPods are the equivalence groups of pods that did not trigger
	// a scale-up; each lists some pods and counts them all.
	PendingPods []PendingEntry `json:"pendingPods,omitempty"`
	// Nodes are the nodes removed, unneeded or kept for a reason worth
	// reading; NodeReasons counts every node kept, by reason, listed or not.
	Nodes       []Node         `json:"nodes,omitempty"`
	NodeReasons map[string]int `json:"nodeReasons,omitempty"`
	// Consolidation is set while consolidation is on: the moves of the
	// last loop, those waiting for their stable time, replacements in
	// flight.
	Consolidation *Consolidation `json:"consolidation,omitempty"`
	// Repair is set while node repair is on: the unhealthy nodes and what
	// is done about each.
	Repair *Repair `json:"repair,omitempty"`
	// BypassedSchedulers are --bypassed-scheduler-names; OtherSchedulers
	// count the waiting pods left alone because another scheduler places
	// them, with why.
	BypassedSchedulers []string        `json:"bypassedSchedulers,omitempty"`
	OtherSchedulers    []SchedulerPods `json:"otherSchedulers,omitempty"`
	// CapacityBuffers are the buffers whose placeholder pods the loop
	// planned with, and where their chunks found room.
	CapacityBuffers []Buffer `json:"capacityBuffers,omitempty"`
	// Forecasts say how the forecast sized each inference workload's warm
	// capacity (its buffer is among CapacityBuffers).
	Forecasts []Forecast `json:"forecasts,omitempty"`
	// Omitted says what was cut to keep the document under its size.
	Omitted *Omitted `json:"omitted,omitempty"`
}

// ClusterWideStatus is upstream's clusterWide.
type ClusterWideStatus struct {
	Health    HealthCondition    `json:"health,omitempty"`
	ScaleUp   ScaleUpCondition   `json:"scaleUp,omitempty"`
	ScaleDown ScaleDownCondition `json:"scaleDown,omitempty"`
}

// NodeGroupStatus is upstream's nodeGroups entry.
type NodeGroupStatus struct {
	Name      string             `json:"name,omitempty"`
	Health    HealthCondition    `json:"health,omitempty"`
	ScaleUp   ScaleUpCondition   `json:"scaleUp,omitempty"`
	ScaleDown ScaleDownCondition `json:"scaleDown,omitempty"`
}

// HealthCondition is upstream's health condition; the group fields are
// set for node groups only.
type HealthCondition struct {
	Status              string      `json:"status,omitempty"`
	NodeCounts          DocCounts   `json:"nodeCounts,omitempty"`
	CloudProviderTarget *int        `json:"cloudProviderTarget,omitempty"`
	MinSize             *int        `json:"minSize,omitempty"`
	MaxSize             *int        `json:"maxSize,omitempty"`
	LastProbeTime       metav1.Time `json:"lastProbeTime,omitempty"`
	LastTransitionTime  metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason and Message say why the cluster is unhealthy (gpuscale).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// DocCounts is upstream's nodeCounts.
type DocCounts struct {
	Registered       RegisteredCounts `json:"registered,omitempty"`
	LongUnregistered int              `json:"longUnregistered"`
	Unregistered     int              `json:"unregistered"`
}

// RegisteredCounts is upstream's nodeCounts.registered.
type RegisteredCounts struct {
	Total        int           `json:"total"`
	Ready        int           `json:"ready"`
	NotStarted   int           `json:"notStarted"`
	BeingDeleted int           `json:"beingDeleted,omitempty"`
	Unready      UnreadyCounts `json:"unready,omitempty"`
}

// UnreadyCounts is upstream's nodeCounts.registered.unready: Total
// unready nodes, ResourceUnready of them missing a resource such as GPUs.
type UnreadyCounts struct {
	Total           int `json:"total"`
	ResourceUnready int `json:"resourceUnready"`
}

// ScaleUpCondition is upstream's scaleUp condition; BackoffInfo is set for
// groups in backoff.
type ScaleUpCondition struct {
	Status             string       `json:"status,omitempty"`
	BackoffInfo        *BackoffInfo `json:"backoffInfo,omitempty"`
	LastProbeTime      metav1.Time  `json:"lastProbeTime,omitempty"`
	LastTransitionTime metav1.Time  `json:"lastTransitionTime,omitempty"`
	// BackoffUntil ends a backoff (gpuscale).
	BackoffUntil *metav1.Time `json:"backoffUntil,omitempty"`
}

// BackoffInfo is upstream's backoffInfo.
type BackoffInfo struct {
	ErrorCode    string `json:"errorCode,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// ScaleDownCondition is upstream's scaleDown condition.
type ScaleDownCondition struct {
	Status             string      `json:"status,omitempty"`
	Candidates         int         `json:"candidates,omitempty"`
	LastProbeTime      metav1.Time `json:"lastProbeTime,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Skipped, CooldownUntil and CooldownReason say why scale-down did not
	// act (gpuscale).
	Skipped        string       `json:"skipped,omitempty"`
	CooldownUntil  *metav1.Time `json:"cooldownUntil,omitempty"`
	CooldownReason string       `json:"cooldownReason,omitempty"`
}

// PendingEntry is one equivalence group of pending pods.
type PendingEntry struct {
	// Pods are NAMESPACE/NAME, the first few; Count counts them all.
	Pods    []string      `json:"pods"`
	Count   int           `json:"count"`
	Reasons []GroupReason `json:"reasons"`
}

// Omitted counts what Render cut.
type Omitted struct {
	PendingGroups int `json:"pendingGroups,omitempty"`
	PendingPods   int `json:"pendingPods,omitempty"`
	Nodes         int `json:"nodes,omitempty"`
}

// Upstream condition statuses.
const (
	Healthy           = "Healthy"
	Unhealthy         = "Unhealthy"
	NoCandidates      = "NoCandidates"
	CandidatesPresent = "CandidatesPresent"
)

// Parse reads a Document back from the ConfigMap's text.
func Parse(text string) (*Document, error) {
	var d Document
	if err := yaml.Unmarshal([]byte(text), &d); err != nil {
		return nil, fmt.Errorf("key %q: %w", Key, err)
	}
	return &d, nil
}

// WrittenByGpuscale says whether the ConfigMap's text carries
// safeToAutoscale, a field gpuscale always writes and the upstream Cluster
// Autoscaler, which writes a document of the same name and layout, never
// does. Without it a Document's SafeToAutoscale is false only because it
// is absent, and must not be read as the health brake holding.
func WrittenByGpuscale(text string) bool {
	var probe struct {
		SafeToAutoscale *bool `json:"safeToAutoscale"`
	}
	return yaml.Unmarshal([]byte(text), &probe) == nil && probe.SafeToAutoscale != nil
}

// Marshal writes the Document as the ConfigMap's text.
func (d *Document) Marshal() (string, error) {
	b, err := blockYAML(d)
	return string(b), err
}

// DocTime parses Document.Time.
func (d *Document) DocTime() (time.Time, error) { return time.Parse(time.RFC3339, d.Time) }

// OtherScheduler returns the entry of pods left alone for scheduler name.
func (d *Document) OtherScheduler(name string) (SchedulerPods, bool) {
	for _, o := range d.OtherSchedulers {
		if o.Scheduler == name {
			return o, true
		}
	}
	return SchedulerPods{}, false
}

// Bypassed reports whether scheduler name is in --bypassed-scheduler-names.
func (d *Document) Bypassed(name string) bool {
	for _, s := range d.BypassedSchedulers {
		if s == name {
			return true
		}
	}
	return false
}

// FindPending returns the pending entry listing pod (NAMESPACE/NAME).
func (d *Document) FindPending(pod string) (PendingEntry, bool) {
	for _, p := range d.PendingPods {
		for _, name := range p.Pods {
			if name == pod {
				return p, true
			}
		}
	}
	return PendingEntry{}, false
}

// FindBuffer returns the entry of a CapacityBuffer (NAMESPACE/NAME).
func (d *Document) FindBuffer(key string) (Buffer, bool) {
	for _, b := range d.CapacityBuffers {
		if b.Key() == key {
			return b, true
		}
	}
	return Buffer{}, false
}

// FindNode returns the entry of a node.
func (d *Document) FindNode(name string) (Node, bool) {
	for _, n := range d.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}
