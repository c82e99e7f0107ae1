package faults_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuscale/gpuscale/pkg/disruption"
)

// beforeTaint runs hook once, just before the first request that puts the
// ToBeDeletedByClusterAutoscaler taint on a node reaches the API server:
// after the loop planned the removal, before the drain starts.
type beforeTaint struct {
	next http.RoundTripper
	once sync.Once
	hook func(node string)
}

func (b *beforeTaint) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut && strings.HasPrefix(req.URL.Path, "/api/v1/nodes/") && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(disruption.TaintToBeDeleted)) {
			b.once.Do(func() { b.hook(strings.TrimPrefix(req.URL.Path, "/api/v1/nodes/")) })
		}
	}
	return b.next.RoundTrip(req)
}

// Fault: a pod is created on a node between the loop planning its removal
// and the drain (bound straight to the node, as a DaemonSet-like
// controller or a scheduler binding in flight would). The removal re-reads
// the node's pods after tainting it, sees the newcomer and calls the
// removal off: the node is untainted and stays, the pod keeps running.
func TestPodCreatedBetweenPlanningAndDraining(t *testing.T) {
	s := newScope(t, "race")
	cfg := s.kwokConfig(time.Second, groupSpec{name: "cpu", max: 5, cpu: "4"})
	late := make(chan string, 1)
	hook := &beforeTaint{hook: func(node string) {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: s.ns},
			Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "main", Image: "busybox",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}}},
		}
		if _, err := s.c.Client.CoreV1().Pods(s.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Errorf("creating the late pod: %v", err)
		}
		late <- node
	}}
	conf := rest.CopyConfig(s.c.Config)
	conf.Wrap(func(rt http.RoundTripper) http.RoundTripper { hook.next = rt; return hook })
	client, err := kubernetes.NewForConfig(conf)
	if err != nil {
		t.Fatal(err)
	}
	s.start(s.options("a"), startOptions{Config: cfg, Client: client})
	s.deploy(workload{name: "web", replicas: 1, cpu: "1"})
	eventually(t, 60*time.Second, "web to run", func() bool { return s.running("web") == 1 })
	s.c.ScaleDeployment(t, s.ns, "web", 0) // the node becomes idle: it is removed after 3s
	var node string
	select {
	case node = <-late:
	case <-time.After(60 * time.Second):
		t.Fatal("the removal never started")
	}
	eventually(t, 30*time.Second, "the removal to be called off and the node untainted", func() bool {
		n, err := s.c.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("node %s: %v: removed with a pod the plan did not know", node, err)
		}
		for _, tt := range n.Spec.Taints {
			if tt.Key == disruption.TaintToBeDeleted {
				return false
			}
		}
		return true
	})
	time.Sleep(5 * time.Second) // more loops: the bare pod now keeps the node
	p, err := s.c.Client.CoreV1().Pods(s.ns).Get(context.Background(), "late", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil || p.Spec.NodeName != node {
		t.Fatalf("the late pod was lost: %v %+v", err, p)
	}
	if _, err := s.c.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{}); err != nil {
		t.Fatalf("node %s: %v", node, err)
	}
	if !strings.Contains(s.logs.String(), "arrived after the plan") {
		t.Errorf("the abort was not logged:\n%s", s.logs.String())
	}
}
