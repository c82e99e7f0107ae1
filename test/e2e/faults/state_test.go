package faults_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// workload is a Deployment of the scope whose pods select its nodes.
type workload struct {
	name     string
	replicas int32
	cpu      string
	// gpus each pod asks for (nvidia.com/gpu), when set.
	gpus int
	// priorityClass, finalizers and edit shape the pod template.
	priorityClass string
	finalizers    []string
	// preferNode is a node the scheduler should prefer (soft affinity,
	// which the autoscaler's simulation does not hold pods to).
	preferNode string
}

func (s *scope) deploy(w workload) {
	s.t.Helper()
	lbl := map[string]string{"app": w.name}
	zero := int64(0)
	pod := v1.PodSpec{
		Containers: []v1.Container{{Name: "main", Image: "busybox", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(w.cpu)}}}},
		NodeSelector:                  map[string]string{LabelScope: s.ns},
		PriorityClassName:             w.priorityClass,
		TerminationGracePeriodSeconds: &zero,
	}
	if w.gpus > 0 {
		gpus := *resource.NewQuantity(int64(w.gpus), resource.DecimalSI)
		pod.Containers[0].Resources.Requests[gpu.ResourceName] = gpus
		pod.Containers[0].Resources.Limits = v1.ResourceList{gpu.ResourceName: gpus}
	}
	if w.preferNode != "" {
		pod.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
			Weight: 100, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{
				Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{w.preferNode}}}}}}}}
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: s.ns},
		Spec: appsv1.DeploymentSpec{Replicas: &w.replicas, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl, Finalizers: w.finalizers}, Spec: pod}},
	}
	if _, err := s.c.Client.AppsV1().Deployments(s.ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// nodes lists the registered nodes of a group of the scope.
func (s *scope) nodes(group string) []v1.Node {
	s.t.Helper()
	l, err := s.c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{
		LabelSelector: kwok.LabelNodeGroup + "=" + s.group(group)})
	if err != nil {
		s.t.Fatal(err)
	}
	return l.Items
}

// allNodes counts the registered nodes of the scope, every group.
func (s *scope) allNodes() int {
	l, err := s.c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: LabelScope + "=" + s.ns})
	if err != nil {
		return -1
	}
	return len(l.Items)
}

// pods lists the pods of an app.
func (s *scope) pods(app string) []v1.Pod {
	s.t.Helper()
	l, err := s.c.Client.CoreV1().Pods(s.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		s.t.Fatal(err)
	}
	return l.Items
}

// running counts the app's pods that run and are not terminating.
func (s *scope) running(app string) int {
	n := 0
	for _, p := range s.pods(app) {
		if p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// pendingEntries are the scope's kwok creations not made yet (the kwok
// provider's state ConfigMap).
func (s *scope) pendingEntries() int {
	cm, err := s.c.Client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), kwok.StateConfigMapName, metav1.GetOptions{})
	if err != nil {
		return 0
	}
	return strings.Count(cm.Annotations[kwok.AnnotationPending], `"name"`)
}

// instances counts the machines of the scope's groups named: registered
// nodes and kwok creations not made yet, each name once. The provider
// creates a node before it forgets the creation, so adding the two counts
// would see one machine twice for a moment. It runs in peak's goroutine:
// a failed read counts nothing rather than stopping the test.
func (s *scope) instances(groups ...string) int {
	ctx := context.Background()
	names := map[string]bool{}
	in := map[string]bool{}
	for _, g := range groups {
		in[s.group(g)] = true
		l, err := s.c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwok.LabelNodeGroup + "=" + s.group(g)})
		if err != nil {
			return 0
		}
		for _, n := range l.Items {
			names[n.Name] = true
		}
	}
	cm, err := s.c.Client.CoreV1().ConfigMaps(s.ns).Get(ctx, kwok.StateConfigMapName, metav1.GetOptions{})
	if err == nil && cm.Annotations[kwok.AnnotationPending] != "" {
		var pending []kwok.PendingNode
		if err := json.Unmarshal([]byte(cm.Annotations[kwok.AnnotationPending]), &pending); err != nil {
			s.t.Errorf("kwok state of %s: %v", s.ns, err)
		}
		for _, pn := range pending {
			if in[pn.Group] {
				names[pn.Name] = true
			}
		}
	}
	return len(names)
}

// status reads the status document an autoscaler of the scope wrote; nil
// when there is none yet.
func (s *scope) status(name string) *status.Document {
	cm, err := s.c.Client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	d, err := status.Parse(cm.Data[status.Key])
	if err != nil {
		s.t.Fatalf("status ConfigMap %s: %v", name, err)
	}
	return d
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// peak samples f in the background from now on; the returned function
// stops sampling and returns the largest value seen.
func peak(f func() int) func() int {
	var mu sync.Mutex
	m := f()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			v := f()
			mu.Lock()
			m = max(m, v)
			mu.Unlock()
		}
	}()
	var once sync.Once
	return func() int {
		once.Do(func() { close(stop); <-done })
		mu.Lock()
		defer mu.Unlock()
		return m
	}
}

// metric reads one sample line's value from a replica's /metrics, "" when
// absent.
func metric(t *testing.T, addr, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
