package controller

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/slim"
)

// TestCachesHoldOnlyWhatIsRead: the informer caches keep no managed
// fields and no last-applied configuration, and every other annotation.
func TestCachesHoldOnlyWhatIsRead(t *testing.T) {
	fat := func(m *metav1.ObjectMeta) {
		m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
		m.Annotations = map[string]string{slim.LastApplied: `{"big":"object"}`, "cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}
	}
	node, pod := groupNode("n1", "g"), builder.Pod("p").OnNode("n1").Build()
	fat(&node.ObjectMeta)
	fat(&pod.ObjectMeta)
	node.Status.Images = []v1.ContainerImage{{Names: []string{"registry.example/vllm:0.11"}, SizeBytes: 9 << 30}}
	o := DefaultOptions()
	o.Address, o.LeaderElection.Enabled, o.Logger, o.Clock = "", false, quiet(), clocktesting.NewFakeClock(t0)
	c, err := New(fake.NewClientset(node, pod), &groupsProvider{groups: []string{"g"}}, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c.factory.Start(ctx.Done())
	defer func() { cancel(); c.factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), c.factory.Core().V1().Nodes().Informer().HasSynced, c.factory.Core().V1().Pods().Informer().HasSynced) {
		t.Fatal("caches did not sync")
	}
	cachedNode, err := c.listers.nodes.Get("n1")
	if err != nil {
		t.Fatal(err)
	}
	cachedPod, err := c.listers.pods.Pods("default").Get("p")
	if err != nil {
		t.Fatal(err)
	}
	if len(cachedNode.Status.Images) != 0 {
		t.Errorf("cached node keeps its image list: %v", cachedNode.Status.Images)
	}
	for name, m := range map[string]metav1.ObjectMeta{"node": cachedNode.ObjectMeta, "pod": cachedPod.ObjectMeta} {
		if len(m.ManagedFields) != 0 {
			t.Errorf("cached %s keeps %d managed fields", name, len(m.ManagedFields))
		}
		if _, ok := m.Annotations[slim.LastApplied]; ok {
			t.Errorf("cached %s keeps %s", name, slim.LastApplied)
		}
		if m.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] != "true" {
			t.Errorf("cached %s lost its other annotations: %v", name, m.Annotations)
		}
	}
}
