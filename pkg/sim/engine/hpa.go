package engine

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/hpa"
)

// PodAutoscaler is the HorizontalPodAutoscaler of one Deployment. The
// engine calls Sync once per sync period with the Deployment's replicas
// (spec.replicas), its pods (phase, Ready condition, start time) and each
// pod's metric value in milli-units; every Pods metric of the spec reads
// that value. The model keeps its own history (stabilization windows,
// scale events).
//
// Object and External metrics read total: the Deployment's load at that
// moment, in the load curve's units, in milli-units (a queue or a request
// rate in front of the pods, which exists at 0 replicas too, so an HPA
// with minReplicas 0 can scale the Deployment from 0).
//
// Sync also says whether the sync was steady: every metric proposed the
// current replicas. A steady sync decides "no change" whatever the
// history, so while the input stays the same the engine does not call
// Sync again; before the input changes it replays the last skipped sync,
// so the model's history holds what the controller's would.
type PodAutoscaler interface {
	Sync(now time.Time, replicas int32, pods []*v1.Pod, metric map[string]hpa.PodMetric, total int64) (desired int32, steady bool, err error)
	// Status is the HPA's status as the last sync wrote it.
	Status() autoscalingv2.HorizontalPodAutoscalerStatus
}

// NewPodAutoscaler builds the model for an HPA spec.
type NewPodAutoscaler func(spec autoscalingv2.HorizontalPodAutoscalerSpec) (PodAutoscaler, error)

// NewHPAModel is the default: pkg/hpa, the model of the autoscaling/v2
// controller, with kube-controller-manager's default flags.
func NewHPAModel(spec autoscalingv2.HorizontalPodAutoscalerSpec) (PodAutoscaler, error) {
	m, err := hpa.New(spec, hpa.DefaultOptions())
	if err != nil {
		return nil, err
	}
	ms := m.Spec().Metrics
	h := &hpaModel{m: m, readings: make([]hpa.Reading, len(ms)), total: make([]bool, len(ms))}
	for i, ms := range ms {
		h.total[i] = ms.Type == autoscalingv2.ObjectMetricSourceType || ms.Type == autoscalingv2.ExternalMetricSourceType
	}
	return h, nil
}

type hpaModel struct {
	m        *hpa.Model
	readings []hpa.Reading
	// total marks the metrics that read the Deployment's load as one value.
	total []bool
	// status is what the last sync wrote.
	status autoscalingv2.HorizontalPodAutoscalerStatus
}

func (h *hpaModel) Status() autoscalingv2.HorizontalPodAutoscalerStatus { return h.status }

func (h *hpaModel) Sync(now time.Time, replicas int32, pods []*v1.Pod, metric map[string]hpa.PodMetric, total int64) (int32, bool, error) {
	for i := range h.readings {
		if h.total[i] {
			h.readings[i].Value = total
		} else {
			h.readings[i].Pods = metric
		}
	}
	d, err := h.m.Step(hpa.Input{Now: now, Replicas: replicas, StatusReplicas: int32(len(pods)), Pods: pods, Metrics: h.readings})
	if err != nil {
		return replicas, false, err
	}
	h.status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: int32(len(pods)), DesiredReplicas: d.DesiredReplicas,
		CurrentMetrics: hpa.CurrentMetrics(h.m.Spec(), d.Metrics)}
	steady := len(d.Metrics) > 0
	for _, m := range d.Metrics {
		if m.Err != nil || m.Proposal != replicas {
			steady = false
		}
	}
	return d.DesiredReplicas, steady, nil
}

// syncHPA runs one Deployment's HPA at now, skipping syncs that are steady
// and see the same input as the last one.
func (e *Engine) syncHPA(w *workloadState) error {
	v := &w.view
	// A serving Deployment's metrics move with every request: no sync is
	// skipped.
	same := w.serving == nil && v.built && v.version == w.version && e.now < v.nextReady && w.utilFor(e.now, v.ready) == v.util &&
		w.totalFor(e.now) == v.total
	if same && w.steady && !e.opts.EveryLoop {
		w.skipped, w.skippedAt = true, e.now
		return nil
	}
	if w.skipped {
		// The controller ran at skippedAt on the input still in the view.
		if _, _, err := w.hpa.Sync(clock(w.skippedAt), int32(w.desired), v.pods, v.metric, v.total); err != nil {
			return err
		}
		w.skipped = false
	}
	pods, metric := w.hpaInput(e.now)
	if w.serving != nil {
		w.servingMetrics(e.now, metric)
	}
	v.total = w.totalFor(e.now)
	n, steady, err := w.hpa.Sync(clock(e.now), int32(w.desired), pods, metric, v.total)
	if err != nil {
		return err
	}
	w.steady = steady && int(n) == w.desired
	if int(n) != w.desired {
		return e.setReplicas(w, int(n))
	}
	return nil
}

// utilFor is the value each of ready Ready pods reports at now.
func (w *workloadState) utilFor(now time.Duration, ready int) int64 {
	if ready == 0 || w.serving != nil {
		return 0
	}
	l := w.cfg.Deployment.Load
	return int64(min(100, 100*load(l, now)/float64(ready)/l.CapacityPerPod) * 1000)
}

// totalFor is what Object and External metrics read at now: the load, in
// milli-units of the load curve; for a serving Deployment its requests in
// flight (scenario.InFlightMetric); 0 for a Deployment without either.
func (w *workloadState) totalFor(now time.Duration) int64 {
	if w.serving != nil {
		return int64(w.serving.inFlight(now)) * 1000
	}
	if w.cfg.Deployment.Load == nil {
		return 0
	}
	return int64(load(w.cfg.Deployment.Load, now) * 1000)
}

// hpaView is what the HPA sees of a Deployment's pods, kept up to date in
// place so that a sync in which nothing changed costs nothing: each pod's
// phase, Ready condition and start time, and the metric values.
type hpaView struct {
	pods   []*v1.Pod
	metric map[string]hpa.PodMetric
	// version is the workload's pod version the view was built at; ready
	// is how many pods were Ready, nextReady when the next running pod
	// turns Ready, util the value Ready pods report.
	version    uint64
	built      bool
	ready      int
	nextReady  time.Duration
	util       int64
	readyNames []string
	// total is the value Object and External metrics read at the last sync.
	total int64
}

// hpaPod is a pod as the HPA sees it, made once per pod.
func hpaPod(p *simPod) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.pi.Pod.Name, Namespace: p.pi.Pod.Namespace},
		Status:     v1.PodStatus{Phase: v1.PodPending, Conditions: make([]v1.PodCondition, 0, 1)},
	}
}

// hpaInput refreshes what the HPA sees of w at now. Ready pods share the load
// equally, each at most 100% busy; running pods not yet Ready report 0
// (they serve nothing); pending pods have no sample.
func (w *workloadState) hpaInput(now time.Duration) ([]*v1.Pod, map[string]hpa.PodMetric) {
	v := &w.view
	if !v.built || v.version != w.version || now >= v.nextReady {
		w.rebuildView(now)
	}
	if util := w.utilFor(now, v.ready); util != v.util {
		for _, name := range v.readyNames {
			v.metric[name] = hpa.PodMetric{Value: util}
		}
		v.util = util
	}
	return v.pods, v.metric
}

// rebuildView writes every pod's status and sample afresh.
func (w *workloadState) rebuildView(now time.Duration) {
	d := w.cfg.Deployment
	v := &w.view
	if v.metric == nil {
		v.metric = map[string]hpa.PodMetric{}
	}
	clear(v.metric)
	v.pods = v.pods[:0]
	v.built, v.version, v.ready, v.nextReady, v.util = true, w.version, 0, never, 0
	v.readyNames = v.readyNames[:0]
	for _, p := range w.replicas {
		pod := p.hpaPod
		v.pods = append(v.pods, pod)
		if p.node == "" {
			pod.Status.Phase, pod.Status.StartTime, pod.Status.Conditions = v1.PodPending, nil, pod.Status.Conditions[:0]
			continue
		}
		readyAt := p.boundAt + d.ReadyAfter.Duration
		cond := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, LastTransitionTime: metav1.NewTime(clock(p.boundAt))}
		if now >= readyAt {
			cond.Status, cond.LastTransitionTime = v1.ConditionTrue, metav1.NewTime(clock(readyAt))
			v.ready++
			v.readyNames = append(v.readyNames, pod.Name)
		} else {
			v.nextReady = min(v.nextReady, readyAt)
		}
		p.started = metav1.NewTime(clock(p.boundAt))
		pod.Status.Phase, pod.Status.StartTime = v1.PodRunning, &p.started
		pod.Status.Conditions = append(pod.Status.Conditions[:0], cond)
		v.metric[pod.Name] = hpa.PodMetric{}
	}
}
