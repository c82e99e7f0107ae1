package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/status"
)

func shardController(t *testing.T, client *fake.Clientset, own string, peers ...string) (*Controller, *record.FakeRecorder) {
	t.Helper()
	o := DefaultOptions()
	o.StatusConfigMapName, o.Sharding.Peers, o.Logger = own, peers, quiet()
	c, err := New(client, &groupsProvider{groups: []string{"g"}}, o)
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(100)
	c.events = &eventSink{recorder: rec, limiter: newEventLimiter(time.Minute), clock: clocktesting.NewFakeClock(t0)}
	return c, rec
}

func pendingPod(name string) *v1.Pod {
	p := builder.Pod(name).CPU("1").Build()
	p.UID = types.UID("uid-" + name)
	return p
}

// Shard a scales up for a pod and publishes the claim; shard b, reading a's
// status ConfigMap, leaves the pod out of its scale-up and says so on the
// pod. The claim ends with the pod scheduled or after the provisioning time.
func TestShardsDoNotScaleUpTheSamePods(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	a, _ := shardController(t, client, "status-a", "status-b")
	b, events := shardController(t, client, "status-b", "status-a")
	web, other := pendingPod("web"), pendingPod("other")
	plan := autoscaler.Plan{Status: status.Status{
		ScaleUps:  []status.ScaleUp{{Group: "a-cpu", From: 0, To: 1, Pods: 1}},
		Triggered: []status.Ref{{Namespace: "default", Name: "web", UID: web.UID}},
	}}
	claims := a.updateClaims(t0, []*v1.Pod{web, other}, plan)
	doc, text := status.Render(plan.Status, nil, status.DefaultRenderOptions())
	if err := writeStatus(ctx, client, "kube-system", "status-a", doc, text, map[string]string{ClaimsKey: claims}); err != nil {
		t.Fatal(err)
	}

	left := b.dropClaimed([]*v1.Pod{web, other}, b.readPeerClaims(ctx, t0.Add(time.Minute)))
	if len(left) != 1 || left[0].Name != "other" {
		t.Fatalf("shard b keeps %v, want only the pod nobody claimed", left)
	}
	select {
	case e := <-events.Events:
		if !strings.Contains(e, "ScaleUpClaimedByShard") || !strings.Contains(e, "kube-system/status-a") || !strings.Contains(e, "a-cpu") {
			t.Errorf("event %q, want the claim named", e)
		}
	default:
		t.Error("no event on the claimed pod")
	}
	// Past the provisioning time the claim lapses: b may scale up for it.
	if left := b.dropClaimed([]*v1.Pod{web}, b.readPeerClaims(ctx, t0.Add(16*time.Minute))); len(left) != 1 {
		t.Errorf("a lapsed claim still holds: %v", left)
	}
	// Once the pod is no longer pending, a drops its claim.
	if got := a.updateClaims(t0.Add(time.Minute), []*v1.Pod{other}, autoscaler.Plan{}); strings.Contains(got, string(web.UID)) {
		t.Errorf("claims %s still name the scheduled pod", got)
	}
	cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "status-a", metav1.GetOptions{})
	if err != nil || cm.Data[status.Key] == "" {
		t.Errorf("the status document is not beside the claims: %v", err)
	}
}

// Claims are bounded, and a peer's unreadable claims are ignored, not
// fatal.
func TestClaimsBoundsAndBadPeers(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	a, _ := shardController(t, client, "status-a", "status-b")
	var pending []*v1.Pod
	var refs []status.Ref
	for i := range MaxClaims + 10 {
		p := pendingPod(fmt.Sprintf("p%d", i))
		pending = append(pending, p)
		refs = append(refs, status.Ref{Namespace: "default", Name: p.Name, UID: p.UID})
	}
	claims := a.updateClaims(t0, pending, autoscaler.Plan{Status: status.Status{ScaleUps: []status.ScaleUp{{Group: "g"}}, Triggered: refs}})
	if n := strings.Count(claims, "uid-"); n != MaxClaims {
		t.Errorf("%d pods claimed, want at most %d", n, MaxClaims)
	}
	_, err := client.CoreV1().ConfigMaps("kube-system").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "status-b", Namespace: "kube-system"},
		Data: map[string]string{ClaimsKey: "{not json"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.readPeerClaims(ctx, t0); len(got) != 0 {
		t.Errorf("claims %v from an unreadable peer", got)
	}
}

func TestShardingOptionsAreChecked(t *testing.T) {
	o := DefaultOptions()
	o.Sharding.Peers = []string{o.StatusConfigMapName}
	if _, err := New(fake.NewClientset(), &groupsProvider{}, o); err == nil || !strings.Contains(err.Error(), "own --status-config-map-name") {
		t.Errorf("own ConfigMap as a peer: %v", err)
	}
	o.Sharding.Peers, o.WriteStatusConfigMap = []string{"other"}, false
	if _, err := New(fake.NewClientset(), &groupsProvider{}, o); err == nil || !strings.Contains(err.Error(), "--write-status-configmap") {
		t.Errorf("peers without a status ConfigMap: %v", err)
	}
}

// A claim lapses when its scale-ups time out, at each group's own max node
// provision time, for the shard that wrote it and for its peers.
func TestClaimsLapseAtTheirGroupsDeadline(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	a, _ := shardController(t, client, "status-a", "status-b")
	b, _ := shardController(t, client, "status-b", "status-a")
	web := pendingPod("web")
	plan := autoscaler.Plan{Status: status.Status{
		ScaleUps:  []status.ScaleUp{{Group: "fast", From: 0, To: 1, Pods: 1, Deadline: t0.Add(5 * time.Minute)}},
		Triggered: []status.Ref{{Namespace: "default", Name: "web", UID: web.UID}},
	}}
	claims := a.updateClaims(t0, []*v1.Pod{web}, plan)
	doc, text := status.Render(plan.Status, nil, status.DefaultRenderOptions())
	if err := writeStatus(ctx, client, "kube-system", "status-a", doc, text, map[string]string{ClaimsKey: claims}); err != nil {
		t.Fatal(err)
	}
	if left := b.dropClaimed([]*v1.Pod{web}, b.readPeerClaims(ctx, t0.Add(4*time.Minute))); len(left) != 0 {
		t.Errorf("within the group's 5m the claim must hold: %v", left)
	}
	if left := b.dropClaimed([]*v1.Pod{web}, b.readPeerClaims(ctx, t0.Add(6*time.Minute))); len(left) != 1 {
		t.Errorf("past the group's 5m (the flag says 15m) the claim still holds")
	}
	if got := a.updateClaims(t0.Add(6*time.Minute), []*v1.Pod{web}, autoscaler.Plan{}); strings.Contains(got, string(web.UID)) {
		t.Errorf("shard a keeps its lapsed claim: %s", got)
	}
}
