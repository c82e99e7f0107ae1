// Package scenario is the input of `gpuscale simulate`: node groups with
// prices, workloads (Deployments with load curves and HorizontalPodAutoscalers,
// batches of Jobs), the scheduler's scoring, the delays of the modelled cloud,
// the autoscaler's options under their upstream flag names, and a seed. YAML
// is decoded strictly: an unknown or misspelt field is an error, and every
// check names the field and the value.
package scenario

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scenario is one simulation input.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Seed drives every random choice (the expanders' tie-break, the
	// scheduler's tie-break among equal scores).
	Seed int64 `json:"seed,omitempty"`
	// Duration is how much virtual time to simulate; zero means until the
	// last Job has finished.
	Duration metav1.Duration `json:"duration,omitempty"`
	// SampleInterval is the step of the time series (default 1m).
	SampleInterval metav1.Duration `json:"sampleInterval,omitempty"`
	// ProvisioningDelay is how long a new node takes to register after the
	// scale-up (default 2m); DevicePluginDelay is how long a GPU node then
	// runs before its GPUs are allocatable (default 1m).
	ProvisioningDelay metav1.Duration  `json:"provisioningDelay,omitempty"`
	DevicePluginDelay *metav1.Duration `json:"devicePluginDelay,omitempty"`
	// NodeDeletionDelay is how long a node takes to go once its removal
	// starts: its pods' termination and the cloud's deletion (default 0).
	// It is billed meanwhile.
	NodeDeletionDelay metav1.Duration `json:"nodeDeletionDelay,omitempty"`
	// CreationFailureDelay is how long the cloud takes to report a node it
	// cannot create, in a group's stockout (default 1m).
	CreationFailureDelay metav1.Duration `json:"creationFailureDelay,omitempty"`
	// InterruptionNotice is how long before the cloud reclaims a node it
	// interrupts the node carries the interruption taint (default 2m, an
	// EC2 spot interruption notice); InterruptionTaint is that taint's key
	// (default the AWS Node Termination Handler's spot-itn).
	InterruptionNotice metav1.Duration `json:"interruptionNotice,omitempty"`
	InterruptionTaint  string          `json:"interruptionTaint,omitempty"`
	// HPASyncPeriod is the HorizontalPodAutoscaler controller's period
	// (--horizontal-pod-autoscaler-sync-period, default 15s).
	HPASyncPeriod metav1.Duration `json:"hpaSyncPeriod,omitempty"`
	Scheduler     Scheduler       `json:"scheduler,omitempty"`
	// Autoscaler holds node autoscaler options under their upstream flag
	// names (every decision flag of `gpuscale cluster-autoscaler`); unset
	// ones keep the upstream defaults.
	Autoscaler Settings    `json:"autoscaler,omitempty"`
	NodeGroups []NodeGroup `json:"nodeGroups"`
	Workloads  []Workload  `json:"workloads"`
	// DaemonSets run a pod on every node whose taints they tolerate and
	// whose labels match their node selector; the autoscaler counts them
	// on template nodes.
	DaemonSets []DaemonSet `json:"daemonSets,omitempty"`
	// StorageClasses, PersistentVolumes and PersistentVolumeClaims are the
	// cluster's storage, as the API has them; pods mount claims through
	// their template's volumes. No volume controller runs: a claim that
	// names a volume is bound to it, the others stay unbound.
	StorageClasses         []storagev1.StorageClass   `json:"storageClasses,omitempty"`
	PersistentVolumes      []v1.PersistentVolume      `json:"persistentVolumes,omitempty"`
	PersistentVolumeClaims []v1.PersistentVolumeClaim `json:"persistentVolumeClaims,omitempty"`
	// CapacityBuffers are warm room held by placeholder pods (buffers.go).
	CapacityBuffers []CapacityBuffer `json:"capacityBuffers,omitempty"`
}

// DaemonSet is a pod on every matching node.
type DaemonSet struct {
	Name string `json:"name"`
	// Namespace defaults to "kube-system".
	Namespace string      `json:"namespace,omitempty"`
	Pod       PodTemplate `json:"pod"`
}

// Window is a span of virtual time, From inclusive, To exclusive.
type Window struct {
	From metav1.Duration `json:"from"`
	To   metav1.Duration `json:"to"`
}

// PDB is a workload's PodDisruptionBudget: give one of MinAvailable and
// MaxUnavailable, in pods.
type PDB struct {
	MinAvailable   *int32 `json:"minAvailable,omitempty"`
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`
}

// Scheduler is the placement model's scoring.
type Scheduler struct {
	// Scoring is LeastAllocated (kube-scheduler's default) or MostAllocated.
	Scoring string `json:"scoring,omitempty"`
	// Resources weigh each resource in the score (default cpu 1, memory 1,
	// as kube-scheduler's NodeResourcesFit).
	Resources map[v1.ResourceName]int64 `json:"resources,omitempty"`
}

// Scoring strategies.
const (
	LeastAllocated = "LeastAllocated"
	MostAllocated  = "MostAllocated"
)

// NodeGroup is one group of identical nodes.
type NodeGroup struct {
	Name    string `json:"name"`
	MinSize int    `json:"minSize,omitempty"`
	MaxSize int    `json:"maxSize"`
	// InitialSize is how many nodes run at the start (default MinSize).
	InitialSize  *int    `json:"initialSize,omitempty"`
	PricePerHour float64 `json:"pricePerHour"`
	InstanceType string  `json:"instanceType,omitempty"`
	Zone         string  `json:"zone,omitempty"`
	Spot         bool    `json:"spot,omitempty"`
	// Capacity is each node's allocatable, GPUs included (cpu and memory
	// required; pods defaults to 110).
	Capacity v1.ResourceList   `json:"capacity"`
	Labels   map[string]string `json:"labels,omitempty"`
	Taints   []v1.Taint        `json:"taints,omitempty"`
	// VolumeLimits are the CSI attach limits of each node of the group, by
	// driver: the allocatable.count of the CSINode every node publishes.
	// None: the nodes publish no CSINode and attach without limit.
	VolumeLimits map[string]int32 `json:"volumeLimits,omitempty"`
	// Stockouts are windows in which the group's cloud has no capacity:
	// nodes asked for then are never created, and the failure is reported
	// after CreationFailureDelay.
	Stockouts []Window `json:"stockouts,omitempty"`
	// GPUFailures break GPUs of the group's nodes during the run.
	GPUFailures []GPUFailure `json:"gpuFailures,omitempty"`
	// InterruptionsPerHour is how often the cloud takes one of the group's
	// nodes away, per node-hour (a spot pool's interruption frequency): each
	// node's life until its interruption is drawn from an exponential
	// distribution with this rate, from the scenario's seed. 0: never.
	InterruptionsPerHour float64 `json:"interruptionsPerHour,omitempty"`
	// Interruptions are a trace of interruptions: at each time, the cloud
	// interrupts Count of the group's nodes (the oldest first), or all it
	// has when fewer.
	Interruptions []InterruptionAt `json:"interruptions,omitempty"`
	// ReservedNodes are the nodes of the group a capacity reservation
	// pays for: billed for the whole run whether they run or not, and free
	// to the price expander until the group's target reaches them (the
	// reservednodes group option).
	ReservedNodes int `json:"reservedNodes,omitempty"`
	// CapacityBlockEnd makes the group an EC2 Capacity Block for ML that
	// ends this long after the start (the capacityblockend group option):
	// its reservedNodes are billed until the end, the cloud starts
	// terminating its instances 30 minutes before it
	// (whatever still runs there is killed) and launches none from then on.
	CapacityBlockEnd *metav1.Duration `json:"capacityBlockEnd,omitempty"`
	// QueuedProvisioning makes the group a pool of queued capacity (GKE
	// flex-start; the queuedprovisioning group option): it grows only for
	// ProvisioningRequests of the queued-provisioning.gke.io class, each
	// granted whole QueuedDelay after it was made (or at the end of a
	// stockout window covering that time). The granted nodes register
	// after the provisioning delay; with a run duration, the cloud deletes
	// them that long after the grant.
	QueuedProvisioning bool            `json:"queuedProvisioning,omitempty"`
	QueuedDelay        metav1.Duration `json:"queuedDelay,omitempty"`
}

// InterruptionAt is one entry of a group's interruption trace.
type InterruptionAt struct {
	At    metav1.Duration `json:"at"`
	Count int             `json:"count"`
}

// Workload is a Deployment or a set of Jobs; its pods share Pod.
type Workload struct {
	Name string `json:"name"`
	// Namespace defaults to "default".
	Namespace  string      `json:"namespace,omitempty"`
	Pod        PodTemplate `json:"pod"`
	Deployment *Deployment `json:"deployment,omitempty"`
	Jobs       []JobBatch  `json:"jobs,omitempty"`
	// PDB is the workload's PodDisruptionBudget, if any.
	PDB *PDB `json:"pdb,omitempty"`
	// ProvisioningClass is the class of the ProvisioningRequests its jobs
	// of several pods open (with --enable-provisioning-requests):
	// best-effort-atomic-scale-up.autoscaling.x-k8s.io (the default) or
	// queued-provisioning.gke.io, served by queuedProvisioning groups.
	ProvisioningClass string `json:"provisioningClass,omitempty"`
	// MaxRunDuration is a queued request's maxRunDurationSeconds: how long
	// after the grant the cloud keeps its nodes (omitted: no bound).
	MaxRunDuration metav1.Duration `json:"maxRunDuration,omitempty"`
}

// PodTemplate is what every pod of a workload asks for.
type PodTemplate struct {
	Requests     v1.ResourceList   `json:"requests"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	Tolerations  []v1.Toleration   `json:"tolerations,omitempty"`
	Priority     *int32            `json:"priority,omitempty"`
	// NodeAffinity is required node affinity, e.g. a GPU model among several.
	NodeAffinity *v1.NodeSelector `json:"nodeAffinity,omitempty"`
	// SchedulerName is the pods' spec.schedulerName (default-scheduler when
	// empty). The simulated scheduler places every pod alike; the
	// autoscaler acts only for pods of default-scheduler and of
	// --bypassed-scheduler-names, as live.
	SchedulerName string `json:"schedulerName,omitempty"`
	// Volumes the pods mount: PersistentVolumeClaims by name (every replica
	// mounts the same claim) or generic ephemeral volumes (a claim per pod,
	// from the template).
	Volumes []v1.Volume `json:"volumes,omitempty"`
}

// Deployment is a long-running set of replicas.
type Deployment struct {
	Replicas int `json:"replicas"`
	// ReadyAfter is how long a running pod takes to become Ready (default 0).
	ReadyAfter metav1.Duration `json:"readyAfter,omitempty"`
	// HPA is the HorizontalPodAutoscaler spec (scaleTargetRef may be left
	// out); its Pods and Object metrics all read the load-derived per-pod
	// utilization.
	HPA  *autoscalingv2.HorizontalPodAutoscalerSpec `json:"hpa,omitempty"`
	Load *LoadCurve                                 `json:"load,omitempty"`
	// Policies are other HPA specs by name; `gpuscale simulate --compare
	// policy=NAME` runs with the one named in place of HPA.
	Policies map[string]autoscalingv2.HorizontalPodAutoscalerSpec `json:"policies,omitempty"`
	// Serving makes the Deployment an LLM inference server that serves
	// requests; its HPA reads the serving metrics instead of a load curve.
	Serving *Serving `json:"serving,omitempty"`
}

// LoadCurve is the offered load over time. Each Ready pod takes an equal
// share; a pod's utilization is 100 * share / CapacityPerPod, at most 100.
type LoadCurve struct {
	CapacityPerPod float64 `json:"capacityPerPod"`
	// Interpolation is "step" (default) or "linear".
	Interpolation string      `json:"interpolation,omitempty"`
	Points        []LoadPoint `json:"points"`
}

// LoadPoint is the load from At on.
type LoadPoint struct {
	At    metav1.Duration `json:"at"`
	Value float64         `json:"value"`
}

// JobBatch is Count pods submitted at At, each running for Duration once
// scheduled. With Gang > 1 the pods come as jobs of Gang pods each (Count
// a multiple of Gang): a job's pods start only when all of them can run,
// as a gang scheduler places them, and with --enable-provisioning-requests
// each job asks for its capacity through a ProvisioningRequest first.
type JobBatch struct {
	At       metav1.Duration `json:"at"`
	Count    int             `json:"count,omitempty"`
	Duration metav1.Duration `json:"duration"`
	Gang     int             `json:"gang,omitempty"`
}

// PodCount is the number of pods the workload submits (Jobs) or starts
// with (Deployment).
func (w *Workload) PodCount() int {
	if w.Deployment != nil {
		return w.Deployment.Replicas
	}
	n := 0
	for _, b := range w.Jobs {
		n += b.Count
	}
	return n
}
