package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	pr "github.com/gpuscale/gpuscale/pkg/provisioningrequest"
)

// requestWatch keeps ProvisioningRequests (through the dynamic client: the
// API is a CRD) and PodTemplates in informer caches, hands them to the
// loop, and writes the conditions the core decides.
type requestWatch struct {
	client    dynamic.Interface
	factory   dynamicinformer.DynamicSharedInformerFactory
	requests  cache.GenericLister
	templates corelisters.PodTemplateLister
}

// newRequestWatch registers the two informers; onChange is called when a
// request is added or changes, so a new request is looked at at once.
func newRequestWatch(client dynamic.Interface, core informers.SharedInformerFactory, onChange func()) (*requestWatch, []namedInformer, error) {
	f := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	gi := f.ForResource(pr.GroupVersionResource())
	w := &requestWatch{client: client, factory: f, requests: gi.Lister(), templates: core.Core().V1().PodTemplates().Lister()}
	_, err := gi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { onChange() },
		UpdateFunc: func(_, _ any) { onChange() },
	})
	if err != nil {
		return nil, nil, err
	}
	return w, []namedInformer{{"provisioningrequests", gi.Informer()}, {"podtemplates", core.Core().V1().PodTemplates().Informer()}}, nil
}

func (w *requestWatch) start(stop <-chan struct{}) { w.factory.Start(stop) }

// list returns every request with the PodTemplates it names that exist,
// sorted by namespace and name. A request the converter cannot read is
// skipped and reported.
func (w *requestWatch) list() ([]pr.Request, []error) {
	objs, err := w.requests.List(labels.Everything())
	if err != nil {
		return nil, []error{err}
	}
	var out []pr.Request
	var errs []error
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		r, err := pr.FromUnstructured(u)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		req := pr.Request{ProvisioningRequest: r, Templates: map[string]*v1.PodTemplate{}}
		for _, ps := range r.Spec.PodSets {
			if t, err := w.templates.PodTemplates(r.Namespace).Get(ps.PodTemplateRef.Name); err == nil {
				req.Templates[t.Name] = t
			}
		}
		out = append(out, req)
	}
	slices.SortFunc(out, func(a, b pr.Request) int { return cmp.Compare(a.Key(), b.Key()) })
	return out, errs
}

// setConditions writes conditions to the request's status subresource,
// read fresh from the API server and retried on a conflict; a request
// deleted and created again under the same name (another UID) is left
// alone.
func (w *requestWatch) setConditions(ctx context.Context, a autoscaler.SetRequestConditions) error {
	res := w.client.Resource(pr.GroupVersionResource()).Namespace(a.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := res.Get(ctx, a.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		r, err := pr.FromUnstructured(u)
		if err != nil {
			return err
		}
		if a.UID != "" && r.UID != a.UID {
			return fmt.Errorf("ProvisioningRequest %s was replaced (UID %s, decided for %s)", a.Key(), r.UID, a.UID)
		}
		r.Status.Conditions = pr.SetConditions(r.Status.Conditions, a.Conditions...)
		out, err := pr.ToUnstructured(r)
		if err != nil {
			return err
		}
		_, err = res.UpdateStatus(ctx, out, metav1.UpdateOptions{FieldManager: "cluster-autoscaler"})
		return err
	})
}

// SetRequestConditions writes a request's conditions and records an event
// on it for the ones that say what the autoscaler found.
func (a *liveActuator) SetRequestConditions(ctx context.Context, s autoscaler.SetRequestConditions) error {
	if a.requests == nil {
		return fmt.Errorf("ProvisioningRequest %s: ProvisioningRequests are not enabled (--enable-provisioning-requests)", s.Key())
	}
	if err := a.requests.setConditions(ctx, s); err != nil {
		return err
	}
	for _, c := range s.Conditions {
		a.log.Info("ProvisioningRequest condition set", "request", s.Key(), "type", c.Type, "status", c.Status,
			"reason", c.Reason, "message", c.Message)
	}
	return nil
}
