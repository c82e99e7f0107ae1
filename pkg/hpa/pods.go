package hpa

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// podGroups sorts the selected pods as the controller's groupPods does.
type podGroups struct {
	ready   int
	unready []string // pending, or (for CPU) unready or not yet measured since ready
	missing []string // no sample
	ignored []string // deleted or failed
}

// group sorts pods against the samples of one metric. Only CPU samples are
// judged by readiness: a GPU or memory sample of an unready pod counts.
func (s *sync) group(metrics map[string]PodMetric, res v1.ResourceName) podGroups {
	var g podGroups
	opts := s.m.opts
	for _, pod := range s.in.Pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodFailed {
			g.ignored = append(g.ignored, pod.Name)
			continue
		}
		if pod.Status.Phase == v1.PodPending {
			g.unready = append(g.unready, pod.Name)
			continue
		}
		metric, found := metrics[pod.Name]
		if !found {
			g.missing = append(g.missing, pod.Name)
			continue
		}
		if res == v1.ResourceCPU && s.cpuUnready(pod, metric, opts) {
			g.unready = append(g.unready, pod.Name)
			continue
		}
		g.ready++
	}
	sort.Strings(g.unready)
	sort.Strings(g.missing)
	sort.Strings(g.ignored)
	return g
}

// cpuUnready is the controller's rule for trusting a CPU sample: during the
// initialization period the pod must be ready and measured for a full window
// since it became ready; after it, only a pod that turned unready within the
// initial readiness delay of its start (never ready) is left out.
func (s *sync) cpuUnready(pod *v1.Pod, metric PodMetric, opts Options) bool {
	cond := readyCondition(pod)
	if cond == nil || pod.Status.StartTime == nil {
		return true
	}
	start := pod.Status.StartTime.Time
	if start.Add(opts.CPUInitializationPeriod).After(s.in.Now) {
		ts := metric.Timestamp
		if ts.IsZero() {
			ts = s.in.Now
		}
		return cond.Status == v1.ConditionFalse || ts.Before(cond.LastTransitionTime.Add(metric.Window))
	}
	return cond.Status == v1.ConditionFalse && start.Add(opts.InitialReadinessDelay).After(cond.LastTransitionTime.Time)
}

func readyCondition(pod *v1.Pod) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// readyPods counts running, ready pods (Object and External Value targets).
func (s *sync) readyPods() (int64, error) {
	if len(s.in.Pods) == 0 {
		return 0, errNoPods
	}
	var n int64
	for _, pod := range s.in.Pods {
		if c := readyCondition(pod); pod.Status.Phase == v1.PodRunning && c != nil && c.Status == v1.ConditionTrue {
			n++
		}
	}
	return n, nil
}

// requests are each pod's request for res in milli-units: the named
// container's, the pod-level request when set (and no container is named),
// or the sum over containers and restartable init containers.
func requests(pods []*v1.Pod, container string, res v1.ResourceName) (map[string]int64, error) {
	out := make(map[string]int64, len(pods))
	for _, pod := range pods {
		if container == "" && resourcehelper.IsPodLevelRequestsSet(pod) {
			q, ok := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[res]
			if !ok {
				return nil, fmt.Errorf("missing pod-level request for %s in Pod %s", res, pod.Name)
			}
			out[pod.Name] = q.MilliValue()
			continue
		}
		r, err := containerRequests(pod, container, res)
		if err != nil {
			return nil, err
		}
		out[pod.Name] = r
	}
	return out, nil
}

func containerRequests(pod *v1.Pod, container string, res v1.ResourceName) (int64, error) {
	var total int64
	// Containers, then restartable init containers (sidecars), as upstream;
	// indexed rather than copied: this runs for every pod in every sync.
	n := len(pod.Spec.Containers)
	for i := 0; i < n+len(pod.Spec.InitContainers); i++ {
		var c *v1.Container
		if i < n {
			c = &pod.Spec.Containers[i]
		} else {
			c = &pod.Spec.InitContainers[i-n]
			if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
				continue
			}
		}
		if container == "" || container == c.Name {
			q, ok := c.Resources.Requests[res]
			if !ok {
				return 0, fmt.Errorf("missing request for %s in container %s of Pod %s", res, c.Name, pod.Name)
			}
			total += q.MilliValue()
		}
		if container == c.Name {
			return total, nil
		}
	}
	if container != "" {
		return 0, fmt.Errorf("container %s not found in Pod %s", container, pod.Name)
	}
	return total, nil
}

// utilizationRatio is the controller's GetResourceUtilizationRatio: the
// utilization is truncated to a whole percent before the ratio is taken.
func utilizationRatio(metrics map[string]PodMetric, reqs map[string]int64, target int32) (float64, int32, int64, error) {
	var used, requested int64
	n := 0
	for name, m := range metrics {
		r, ok := reqs[name]
		if !ok {
			continue // a sample of a pod not selected
		}
		used += m.Value
		requested += r
		n++
	}
	if requested == 0 {
		return 0, 0, 0, fmt.Errorf("no metrics returned matched known pods")
	}
	util := int32(used * 100 / requested)
	return float64(util) / float64(target), util, used / int64(n), nil
}

// usageRatio is the controller's GetMetricUsageRatio: the average over every
// sample (an integer average) against the target.
func usageRatio(metrics map[string]PodMetric, target int64) (float64, int64) {
	var total int64
	for _, m := range metrics {
		total += m.Value
	}
	avg := total / int64(len(metrics))
	return float64(avg) / float64(target), avg
}

func copySamples(in map[string]PodMetric) map[string]PodMetric {
	out := make(map[string]PodMetric, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func drop(metrics map[string]PodMetric, names []string) {
	for _, n := range names {
		delete(metrics, n)
	}
}
