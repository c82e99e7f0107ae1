package explain

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/hpa"
)

// unservedAsked is how many pods left out of a Pods metric's list are
// asked about one by one.
const unservedAsked = 5

// UnservedPods are the pods a Pods metric's list left out.
type UnservedPods struct {
	Metric string `json:"metric"`
	// Pods are those asked about alone, with the metrics API's answer.
	Pods []UnservedPod `json:"pods,omitempty"`
	// NotAsked counts the others.
	NotAsked int `json:"notAsked,omitempty"`
}

// UnservedPod is one pod without a sample and why, as the metrics API says.
type UnservedPod struct {
	Pod   string `json:"pod"`
	Error string `json:"error"`
}

// unservedPods says why pods the custom metrics API left out of a Pods
// metric's list have no sample. The list answer gives no reason; asked for
// one pod, an adapter says what is wrong with it (gpuscale's metrics
// adapter: a NaN value, several samples for the pod). The HPA controller
// counts such pods as missing and fills them in, so this is where a user
// learns that a value exists but is unusable.
func (e *Explainer) unservedPods(ctx context.Context, ns string, spec autoscalingv2.HorizontalPodAutoscalerSpec, in hpa.Input, a *HPAAnswer) {
	for i, m := range spec.Metrics {
		if m.Type != autoscalingv2.PodsMetricSourceType || m.Pods == nil || i >= len(in.Metrics) || in.Metrics[i].Err != nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(m.Pods.Metric.Selector)
		if err != nil {
			continue
		}
		var missing []string
		for _, p := range in.Pods {
			if _, ok := in.Metrics[i].Pods[p.Name]; !ok && p.DeletionTimestamp == nil &&
				p.Status.Phase != v1.PodFailed && p.Status.Phase != v1.PodSucceeded {
				missing = append(missing, p.Name)
			}
		}
		u := UnservedPods{Metric: m.Pods.Metric.Name}
		for k, name := range missing {
			if k == unservedAsked {
				u.NotAsked = len(missing) - k
				break
			}
			ref := autoscalingv2.CrossVersionObjectReference{Kind: "Pod", Name: name, APIVersion: "v1"}
			if _, err := e.o.Metrics.Object(ctx, ns, ref, m.Pods.Metric.Name, sel); err != nil {
				u.Pods = append(u.Pods, UnservedPod{Pod: name, Error: err.Error()})
			}
		}
		if len(u.Pods) > 0 || u.NotAsked > 0 {
			a.Unserved = append(a.Unserved, u)
		}
	}
}
