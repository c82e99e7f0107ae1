package demo

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// eventSources are the components whose events the walkthrough shows.
var eventSources = map[string]bool{"cluster-autoscaler": true, "horizontal-pod-autoscaler": true}

// watcher prints what happens to the GPU nodes, the demo's pods, the HPA
// and the autoscalers' events as it happens, and keeps count of the GPU
// nodes for the summary.
type watcher struct {
	p     *printer
	app   string // the Deployment (and HPA) watched, its pods labelled app=<app>
	now   func() time.Time
	since time.Time

	mu          sync.Mutex
	nodesSeen   []string // every GPU node ever seen, in order of appearance
	nodesGone   []string
	nodesNow    map[string]bool
	maxNodes    int
	advertised  map[string]bool
	tainted     map[string]bool
	podState    map[string]string
	eventsSeen  map[string]bool
	hpaTable    *hpaTable
	hpaLast     string
	hpaReplicas []int32 // replica counts the HPA went through
}

func newWatcher(p *printer, now func() time.Time, app string) *watcher {
	return &watcher{
		p: p, app: app, now: now, since: now(),
		nodesNow: map[string]bool{}, advertised: map[string]bool{}, tainted: map[string]bool{},
		podState: map[string]string{}, eventsSeen: map[string]bool{},
	}
}

// start runs informers until stop is closed and waits for their first list.
func (w *watcher) start(client kubernetes.Interface, stop <-chan struct{}) error {
	cluster := informers.NewSharedInformerFactory(client, 0)
	local := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	handlers := []struct {
		inf cache.SharedIndexInformer
		fn  func(old, obj any)
	}{
		{cluster.Core().V1().Nodes().Informer(), w.node},
		{local.Core().V1().Pods().Informer(), w.pod},
		{local.Core().V1().Events().Informer(), w.event},
		{local.Autoscaling().V2().HorizontalPodAutoscalers().Informer(), w.hpa},
	}
	for _, h := range handlers {
		fn := h.fn
		if _, err := h.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { fn(nil, obj) },
			UpdateFunc: func(old, obj any) { fn(old, obj) },
			DeleteFunc: func(obj any) { w.deleted(obj) },
		}); err != nil {
			return err
		}
	}
	cluster.Start(stop)
	local.Start(stop)
	for typ, ok := range cluster.WaitForCacheSync(stop) {
		if !ok {
			return fmt.Errorf("demo: watching %v did not sync", typ)
		}
	}
	for typ, ok := range local.WaitForCacheSync(stop) {
		if !ok {
			return fmt.Errorf("demo: watching %v did not sync", typ)
		}
	}
	return nil
}

func (w *watcher) node(_, obj any) {
	n, ok := obj.(*v1.Node)
	if !ok || n.Labels[kwok.LabelNodeGroup] != gpuGroup {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	gpus := n.Status.Allocatable[gpu.ResourceName]
	if !w.nodesNow[n.Name] {
		w.nodesNow[n.Name] = true
		w.nodesSeen = append(w.nodesSeen, n.Name)
		w.maxNodes = max(w.maxNodes, len(w.nodesNow))
		state := "GPU not advertised yet: device plugin starting"
		if !gpus.IsZero() {
			state = gpus.String() + " nvidia.com/gpu"
		}
		w.p.note("node %s added to group %s (%s); GPU nodes: %d", n.Name, gpuGroup, state, len(w.nodesNow))
	}
	if !gpus.IsZero() && !w.advertised[n.Name] {
		w.advertised[n.Name] = true
		w.p.note("node %s advertises %s nvidia.com/gpu", n.Name, gpus.String())
	}
	hasTaint := slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == disruption.TaintToBeDeleted })
	if hasTaint && !w.tainted[n.Name] {
		w.p.note("node %s tainted %s: draining", n.Name, disruption.TaintToBeDeleted)
	}
	w.tainted[n.Name] = hasTaint
}

func (w *watcher) pod(_, obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Labels["app"] != w.app {
		return
	}
	state := "created"
	switch {
	case pod.DeletionTimestamp != nil:
		state = "terminating"
	case pod.Status.Phase == v1.PodRunning:
		state = "Running on " + pod.Spec.NodeName
	case pod.Spec.NodeName == "":
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				state = "Pending: " + c.Message
			}
		}
	case pod.Status.Phase == v1.PodPending:
		state = "scheduled to " + pod.Spec.NodeName
	default:
		state = string(pod.Status.Phase) + " on " + pod.Spec.NodeName
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.podState[pod.Name] != state {
		w.podState[pod.Name] = state
		w.p.note("pod %s %s", pod.Name, state)
	}
}

func (w *watcher) event(_, obj any) {
	e, ok := obj.(*v1.Event)
	if !ok || !eventSources[e.Source.Component] || eventTime(e).Before(w.since) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	key := e.Source.Component + "/" + e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name + "/" + e.Reason + "/" + e.Message
	if w.eventsSeen[key] {
		return
	}
	w.eventsSeen[key] = true
	w.p.note("event %s %s/%s: %s", e.Reason, strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, e.Message)
}

func eventTime(e *v1.Event) time.Time {
	for _, t := range []metav1.Time{e.LastTimestamp, e.FirstTimestamp, e.CreationTimestamp} {
		if !t.IsZero() {
			return t.Time
		}
	}
	return e.EventTime.Time
}

func (w *watcher) hpa(_, obj any) {
	h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok || h.Name != w.app {
		return
	}
	row := hpaRow(h, w.now())
	w.mu.Lock()
	defer w.mu.Unlock()
	// A new line when what the guide's table shows changes: targets or replicas.
	key := row[2] + " " + row[5]
	if key == w.hpaLast {
		return
	}
	if w.hpaTable == nil {
		w.hpaTable = newHPATable(row)
		w.p.block(w.hpaTable.header())
	}
	w.hpaLast = key
	// Before its first sync an HPA reports 0 replicas and no metric: not
	// a count it went through (0 with a metric read is scale to zero).
	synced := h.Status.CurrentReplicas > 0 || len(h.Status.CurrentMetrics) > 0
	if n := len(w.hpaReplicas); synced && (n == 0 || w.hpaReplicas[n-1] != h.Status.CurrentReplicas) {
		w.hpaReplicas = append(w.hpaReplicas, h.Status.CurrentReplicas)
	}
	w.p.block(w.hpaTable.line(row))
}

func (w *watcher) deleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch o := obj.(type) {
	case *v1.Node:
		if w.nodesNow[o.Name] {
			delete(w.nodesNow, o.Name)
			w.nodesGone = append(w.nodesGone, o.Name)
			w.p.note("node %s removed from group %s; GPU nodes: %d", o.Name, gpuGroup, len(w.nodesNow))
		}
	case *v1.Pod:
		if o.Labels["app"] == w.app {
			delete(w.podState, o.Name)
			w.p.note("pod %s deleted", o.Name)
		}
	}
}

// NodeRecord is what the watcher saw of the GPU group's nodes.
type NodeRecord struct {
	// Seen lists every GPU node that appeared, in order; Removed those that
	// went away; Max is the most there were at once.
	Seen    []string
	Removed []string
	Max     int
}

func (w *watcher) record() (NodeRecord, []int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return NodeRecord{Seen: slices.Clone(w.nodesSeen), Removed: slices.Clone(w.nodesGone), Max: w.maxNodes},
		slices.Clone(w.hpaReplicas)
}
