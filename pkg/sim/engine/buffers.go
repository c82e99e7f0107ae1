package engine

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/capacitybuffer"
	"github.com/gpuscale/gpuscale/pkg/forecast"
)

// bufferInput is the scenario's CapacityBuffers resolved as the live
// buffer controller resolves them, against the workloads' desired
// replicas now; nil unless pod injection is on, as live.
func (e *Engine) bufferInput() []capacitybuffer.Buffer {
	if !e.opts.Autoscaler.CapacityBuffers.PodInjectionEnabled || len(e.sc.CapacityBuffers) == 0 {
		return nil
	}
	src := capacitybuffer.Sources{Templates: map[string]*v1.PodTemplate{}, Scalables: map[capacitybuffer.ScalableKey]capacitybuffer.Scalable{}}
	for _, w := range e.work.list {
		if w.cfg.Deployment != nil {
			src.Scalables[capacitybuffer.ScalableKey{Namespace: w.cfg.Namespace, Group: "apps", Kind: "Deployment", Name: w.cfg.Name}] =
				capacitybuffer.Scalable{Template: v1.PodTemplateSpec{Spec: w.cfg.Pod.Spec()}, Replicas: int32(w.desired)}
		}
	}
	out := make([]capacitybuffer.Buffer, 0, len(e.sc.CapacityBuffers))
	for _, b := range e.sc.CapacityBuffers {
		if b.Pod != nil {
			t := &v1.PodTemplate{Template: v1.PodTemplateSpec{Spec: b.Pod.Spec()}}
			t.Name = b.Name
			src.Templates[b.Namespace+"/"+b.Name] = t
		}
		r, err := capacitybuffer.Resolve(b.Object(), src)
		if err != nil {
			e.fail(err)
			continue
		}
		out = append(out, r.Buffer)
	}
	return out
}

// demandInput is each Deployment's demand as its HPA last read it, for
// the forecast buffers (read from the HPA's status as live); nil unless
// forecast buffers are on.
func (e *Engine) demandInput() []forecast.Demand {
	if !e.opts.Autoscaler.Forecast.Enabled {
		return nil
	}
	var out []forecast.Demand
	for _, w := range e.work.list {
		if w.hpa == nil {
			continue
		}
		h := &autoscalingv2.HorizontalPodAutoscaler{Spec: *w.cfg.Deployment.HPA, Status: w.hpa.Status()}
		h.Namespace, h.Spec.ScaleTargetRef.Name = w.cfg.Namespace, w.cfg.Name
		if d, ok := forecast.DemandOf(h, v1.PodTemplateSpec{Spec: w.cfg.Pod.Spec()}); ok {
			out = append(out, d)
		}
	}
	return out
}
