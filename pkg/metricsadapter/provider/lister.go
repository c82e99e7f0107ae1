package provider

import (
	"context"
	"fmt"
	"sort"
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/metadata/metadatalister"
	"k8s.io/client-go/tools/cache"
)

// InformerLister answers ListNames from metadata-only informers, one per
// resource, started on the resource's first request and kept in sync
// after, so a request over a thousand pods costs no API server call.
type InformerLister struct {
	mapper  apimeta.RESTMapper
	factory metadatainformer.SharedInformerFactory
	stop    <-chan struct{}

	mu      sync.Mutex
	listers map[schema.GroupVersionResource]*lazyLister
}

type lazyLister struct {
	informer cache.SharedIndexInformer
	lister   metadatalister.Lister
}

// NewInformerLister builds a lister; informers stop when stop closes.
func NewInformerLister(client metadata.Interface, mapper apimeta.RESTMapper, stop <-chan struct{}) *InformerLister {
	factory := metadatainformer.NewSharedInformerFactoryWithOptions(client, 0,
		metadatainformer.WithTransform(keepNameAndLabels))
	return &InformerLister{mapper: mapper, factory: factory, stop: stop, listers: map[schema.GroupVersionResource]*lazyLister{}}
}

// keepNameAndLabels drops what selection does not need (annotations,
// managed fields, owner references) to keep the cache small.
func keepNameAndLabels(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta: m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, Labels: m.Labels,
			UID: m.UID, ResourceVersion: m.ResourceVersion,
		},
	}, nil
}

// ListNames implements ObjectLister.
func (l *InformerLister) ListNames(ctx context.Context, gr schema.GroupResource, namespace string, selector labels.Selector) ([]string, error) {
	gvr, err := l.mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		return nil, fmt.Errorf("resource %s: %w", gr, err)
	}
	ll := l.listerFor(gvr)
	if !ll.informer.HasSynced() && !cache.WaitForCacheSync(ctx.Done(), ll.informer.HasSynced) {
		return nil, fmt.Errorf("cache of %s not synced: %w", gvr.GroupResource(), ctx.Err())
	}
	if selector == nil {
		selector = labels.Everything()
	}
	var objs []*metav1.PartialObjectMetadata
	if namespace != "" {
		objs, err = ll.lister.Namespace(namespace).List(selector)
	} else {
		objs, err = ll.lister.List(selector)
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = o.Name
	}
	sort.Strings(names)
	return names, nil
}

func (l *InformerLister) listerFor(gvr schema.GroupVersionResource) *lazyLister {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ll, ok := l.listers[gvr]; ok {
		return ll
	}
	inf := l.factory.ForResource(gvr)
	ll := &lazyLister{informer: inf.Informer(), lister: metadatalister.New(inf.Informer().GetIndexer(), gvr)}
	l.listers[gvr] = ll
	l.factory.Start(l.stop)
	return ll
}
