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

// unservedPods says why pods the custom metrics API left out of a Pods
// metric's list have no sample. The list answer gives no reason; asked for
// one pod, an adapter says what is wrong with it (gpuscale's metrics
// adapter: a NaN value, several samples for the pod). The HPA controller
// counts such pods as missing and fills them in, so this is where a user
// learns that a value exists but is unusable.
func (e *Explainer) unservedPods(ctx context.Context, ns string, spec autoscalingv2.HorizontalPodAutoscalerSpec, in hpa.Input, r *Report) {
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
		for k, name := range missing {
			if k == unservedAsked {
				r.add("metric pods %s: %d more pod(s) without a sample not asked about", m.Pods.Metric.Name, len(missing)-k)
				break
			}
			ref := autoscalingv2.CrossVersionObjectReference{Kind: "Pod", Name: name, APIVersion: "v1"}
			if _, err := e.o.Metrics.Object(ctx, ns, ref, m.Pods.Metric.Name, sel); err != nil {
				r.add("metric pods %s: pod %s has no sample: %v", m.Pods.Metric.Name, name, err)
			}
		}
	}
}
