package controller

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	appslisters "k8s.io/client-go/listers/apps/v1"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"

	"github.com/gpuscale/gpuscale/pkg/forecast"
)

// demandWatch keeps HorizontalPodAutoscalers and the Deployments they
// scale in informer caches; each loop it reads every such HPA's demand
// from the status its controller wrote, for the forecast buffers
// (--forecast-buffers).
type demandWatch struct {
	hpas        autoscalinglisters.HorizontalPodAutoscalerLister
	deployments appslisters.DeploymentLister
}

func newDemandWatch(f informers.SharedInformerFactory) (*demandWatch, []namedInformer) {
	h, d := f.Autoscaling().V2().HorizontalPodAutoscalers(), f.Apps().V1().Deployments()
	return &demandWatch{hpas: h.Lister(), deployments: d.Lister()},
		[]namedInformer{{"horizontalpodautoscalers", h.Informer()}, {"deployments", d.Informer()}}
}

// list reads the demand of every HPA that scales a Deployment the cache
// holds and that has a reading of a metric with an AverageValue target.
func (w *demandWatch) list() ([]forecast.Demand, error) {
	hs, err := w.hpas.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []forecast.Demand
	for _, h := range hs {
		ref := h.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" {
			continue
		}
		dep, err := w.deployments.Deployments(h.Namespace).Get(ref.Name)
		if err != nil {
			continue // not in the cache yet, or gone: no warm room for it
		}
		if d, ok := forecast.DemandOf(h, dep.Spec.Template); ok {
			out = append(out, d)
		}
	}
	return out, nil
}
