package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	cb "github.com/gpuscale/gpuscale/pkg/capacitybuffer"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// bufferWatch keeps CapacityBuffers (through the dynamic client: the API
// is a CRD) and what they refer to in informer caches. Each loop it
// resolves the buffers (upstream's buffer controller), hands the core
// those ready for provisioning, and writes back their status.
type bufferWatch struct {
	opts         cb.Options
	client       dynamic.Interface
	factory      dynamicinformer.DynamicSharedInformerFactory
	buffers      cache.GenericLister
	templates    corelisters.PodTemplateLister
	deployments  appslisters.DeploymentLister
	replicaSets  appslisters.ReplicaSetLister
	statefulSets appslisters.StatefulSetLister
	jobs         batchlisters.JobLister
}

// newBufferWatch registers the informers; onChange is called when a
// buffer is added or changes, so a new buffer is looked at at once.
func newBufferWatch(opts cb.Options, client dynamic.Interface, core informers.SharedInformerFactory, onChange func()) (*bufferWatch, []namedInformer, error) {
	f := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	gi := f.ForResource(cb.GroupVersionResource())
	apps := core.Apps().V1()
	w := &bufferWatch{opts: opts, client: client, factory: f, buffers: gi.Lister(),
		templates: core.Core().V1().PodTemplates().Lister(), deployments: apps.Deployments().Lister(),
		replicaSets: apps.ReplicaSets().Lister(), statefulSets: apps.StatefulSets().Lister(), jobs: core.Batch().V1().Jobs().Lister()}
	_, err := gi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { onChange() },
		UpdateFunc: func(_, _ any) { onChange() },
	})
	if err != nil {
		return nil, nil, err
	}
	return w, []namedInformer{{"capacitybuffers", gi.Informer()}, {"podtemplates", core.Core().V1().PodTemplates().Informer()},
		{"deployments", apps.Deployments().Informer()}}, nil
}

func (w *bufferWatch) start(stop <-chan struct{}) { w.factory.Start(stop) }

// bufferState is one buffer as this loop resolved it.
type bufferState struct {
	buf *cb.CapacityBuffer
	res cb.Resolution
	err error
}

// resolve reads every buffer, sorted by namespace and name, and resolves
// it. A buffer the converter cannot read is skipped and reported.
func (w *bufferWatch) resolve() ([]bufferState, []error) {
	objs, err := w.buffers.List(labels.Everything())
	if err != nil {
		return nil, []error{err}
	}
	src := w.sources()
	var out []bufferState
	var errs []error
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		b, err := cb.FromUnstructured(u)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		res, err := cb.Resolve(b, src)
		out = append(out, bufferState{buf: b, res: res, err: err})
	}
	slices.SortFunc(out, func(a, b bufferState) int { return cmp.Compare(a.buf.Key(), b.buf.Key()) })
	return out, errs
}

// sources gathers the PodTemplates and workloads buffers may name.
func (w *bufferWatch) sources() cb.Sources {
	src := cb.Sources{Templates: map[string]*v1.PodTemplate{}, Scalables: map[cb.ScalableKey]cb.Scalable{}}
	if ts, err := w.templates.List(labels.Everything()); err == nil {
		for _, t := range ts {
			src.Templates[t.Namespace+"/"+t.Name] = t
		}
	}
	add := func(ns, group, kind, name string, s cb.Scalable) {
		src.Scalables[cb.ScalableKey{Namespace: ns, Group: group, Kind: kind, Name: name}] = s
	}
	if ds, err := w.deployments.List(labels.Everything()); err == nil {
		for _, d := range ds {
			add(d.Namespace, "apps", "Deployment", d.Name, cb.Scalable{Template: d.Spec.Template, Replicas: deref(d.Spec.Replicas, 1)})
		}
	}
	if rs, err := w.replicaSets.List(labels.Everything()); err == nil {
		for _, r := range rs {
			add(r.Namespace, "apps", "ReplicaSet", r.Name, cb.Scalable{Template: r.Spec.Template, Replicas: deref(r.Spec.Replicas, 1)})
		}
	}
	if ss, err := w.statefulSets.List(labels.Everything()); err == nil {
		for _, s := range ss {
			add(s.Namespace, "apps", "StatefulSet", s.Name, cb.Scalable{Template: s.Spec.Template, Replicas: deref(s.Spec.Replicas, 1)})
		}
	}
	if js, err := w.jobs.List(labels.Everything()); err == nil {
		for _, j := range js {
			add(j.Namespace, "batch", "Job", j.Name, cb.Scalable{Template: j.Spec.Template, Replicas: deref(j.Spec.Parallelism, 1)})
		}
	}
	return src
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// ready are the buffers the core plans with: resolved, and ready for
// provisioning by this controller's account or, with the controller off,
// by the status another controller wrote.
func (w *bufferWatch) ready(states []bufferState) []cb.Buffer {
	var out []cb.Buffer
	for _, s := range states {
		if s.err != nil {
			continue
		}
		if !w.opts.ControllerEnabled {
			if c := s.buf.Condition(cb.ReadyForProvisioning); c == nil || c.Status != metav1.ConditionTrue {
				continue
			}
		}
		out = append(out, s.res.Buffer)
	}
	return out
}

// writeStatus writes each buffer's status where this loop changed it:
// ReadyForProvisioning and the resolved fields when the controller is on,
// Provisioning when pod injection is on (from the loop's status).
func (w *bufferWatch) writeStatus(ctx context.Context, states []bufferState, held []status.Buffer, stamp metav1.Time) []error {
	byKey := map[string]status.Buffer{}
	for _, h := range held {
		byKey[h.Key()] = h
	}
	var errs []error
	for _, s := range states {
		st := s.buf.Status
		if w.opts.ControllerEnabled {
			st = cb.ResolvedStatus(s.buf, s.res, s.err, stamp)
		}
		if w.opts.PodInjectionEnabled {
			st.Conditions = slices.Clone(st.Conditions)
			if h, ok := byKey[s.buf.Key()]; ok {
				meta.SetStatusCondition(&st.Conditions, cb.ProvisioningCondition(cb.Held{Key: h.Key(), Replicas: h.Replicas,
					Fit: h.Fit, ScaleUp: h.ScaleUp, NoRoom: h.NoRoom, Why: h.Message}, s.buf.Generation, stamp))
			} else if meta.FindStatusCondition(st.Conditions, cb.Provisioning) != nil {
				// A buffer no longer ready holds no room: say so rather than
				// leave the last loop's account standing.
				meta.SetStatusCondition(&st.Conditions, cb.NotProvisioningCondition(s.buf.Generation, stamp))
			}
		}
		if apiequality.Semantic.DeepEqual(st, s.buf.Status) {
			continue
		}
		if err := w.update(ctx, s.buf.Namespace, s.buf.Name, s.buf.UID, st); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// update writes a buffer's status subresource, read fresh and retried on a
// conflict; a buffer deleted and created again under the same name is left
// alone.
func (w *bufferWatch) update(ctx context.Context, ns, name string, uid types.UID, st cb.Status) error {
	res := w.client.Resource(cb.GroupVersionResource()).Namespace(ns)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		b, err := cb.FromUnstructured(u)
		if err != nil {
			return err
		}
		if b.UID != uid {
			return fmt.Errorf("CapacityBuffer %s/%s was replaced (UID %s, resolved for %s)", ns, name, b.UID, uid)
		}
		b.Status = st
		out, err := cb.ToUnstructured(b)
		if err != nil {
			return err
		}
		_, err = res.UpdateStatus(ctx, out, metav1.UpdateOptions{FieldManager: cb.FieldManager})
		return err
	})
}
