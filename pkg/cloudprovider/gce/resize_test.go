package gce

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
)

// poolEnv is one e2 group "pool" with the given running instances.
func poolEnv(t *testing.T, running, min, max int) (*testEnv, *fakeMIG, *Provider) {
	t.Helper()
	e := newEnv(t)
	tmpl := e.f.addTemplate(testProject, "t", props("e2-standard-4").build())
	m := e.f.addMIG(testProject, testZone, "pool", tmpl, running)
	p := e.provider(t, Options{NodeGroups: []NodeGroupSpec{{Min: min, Max: max, URL: migURL("pool")}}})
	refresh(t, p)
	e.f.resetCalls()
	return e, m, p
}

func TestIncreaseSizeResizesAndWaitsForTheOperation(t *testing.T) {
	e, m, p := poolEnv(t, 2, 0, 5)
	e.f.opRunning = 1
	if err := p.IncreaseSize(context.Background(), migURL("pool"), 3); err != nil {
		t.Fatal(err)
	}
	calls := e.f.callsOf("")
	if len(calls) != 3 {
		t.Fatalf("calls: %+v, want resize and two waits", calls)
	}
	rs := calls[0]
	if rs.Kind != "resize" || rs.Path != "projects/gpu-project/zones/us-central1-a/instanceGroupManagers/pool/resize" ||
		rs.Query.Get("size") != "5" || rs.Query.Get("requestId") == "" {
		t.Errorf("resize call: %+v", rs)
	}
	for _, w := range calls[1:] {
		if w.Kind != "wait" || w.Path != "projects/gpu-project/zones/us-central1-a/operations/operation-1/wait" {
			t.Errorf("wait call: %+v", w)
		}
	}
	if m.target != 5 || p.NodeGroups()[0].TargetSize != 5 {
		t.Errorf("target: server %d, cache %d; want 5", m.target, p.NodeGroups()[0].TargetSize)
	}
	e.f.resetCalls()
	err := p.IncreaseSize(context.Background(), migURL("pool"), 1)
	if err == nil || !strings.Contains(err.Error(), "above max 5") || len(e.f.callsOf("")) != 0 {
		t.Errorf("above max: %v, %d calls", err, len(e.f.callsOf("")))
	}
	if err := p.IncreaseSize(context.Background(), migURL("other"), 1); !errors.Is(err, cloudprovider.ErrNotFound) {
		t.Errorf("unknown group: %v", err)
	}
}

func TestResizeRetriesWithTheSameRequestID(t *testing.T) {
	env, m, p2 := poolEnv(t, 1, 0, 5)
	env.f.failNext("resize", 503, 429)
	if err := p2.IncreaseSize(context.Background(), migURL("pool"), 1); err != nil {
		t.Fatal(err)
	}
	calls := env.f.callsOf("resize")
	if len(calls) != 3 {
		t.Fatalf("resize calls: %d, want 3", len(calls))
	}
	id := calls[0].Query.Get("requestId")
	for i, c := range calls {
		if c.Query.Get("requestId") != id || c.Query.Get("size") != "2" {
			t.Errorf("attempt %d: requestId %q size %q, want %q and 2", i+1, c.Query.Get("requestId"), c.Query.Get("size"), id)
		}
	}
	if m.target != 2 {
		t.Errorf("server target %d, want 2", m.target)
	}
}

func TestOperationErrorFailsTheResize(t *testing.T) {
	e, _, p := poolEnv(t, 1, 0, 5)
	e.f.opError = "QUOTA_EXCEEDED"
	err := p.IncreaseSize(context.Background(), migURL("pool"), 1)
	if err == nil || !strings.Contains(err.Error(), "QUOTA_EXCEEDED") || !strings.Contains(err.Error(), migURL("pool")) {
		t.Fatalf("got %v", err)
	}
	if got := p.NodeGroups()[0].TargetSize; got != 1 {
		t.Errorf("cached target %d after a failed resize, want 1", got)
	}
}

func TestDeleteNodesDeletesTheirInstances(t *testing.T) {
	e, m, p := poolEnv(t, 3, 1, 5)
	nodes := []*v1.Node{node("b", providerID("pool-2")), node("a", providerID("pool-0"))}
	if err := p.DeleteNodes(context.Background(), migURL("pool"), nodes); err != nil {
		t.Fatal(err)
	}
	calls := e.f.callsOf("deleteInstances")
	if len(calls) != 1 || calls[0].Query.Get("requestId") == "" {
		t.Fatalf("deleteInstances calls: %+v", calls)
	}
	var body struct {
		Instances                      []string `json:"instances"`
		SkipInstancesOnValidationError bool     `json:"skipInstancesOnValidationError"`
	}
	if err := json.Unmarshal([]byte(calls[0].Body), &body); err != nil {
		t.Fatal(err)
	}
	want := []string{"projects/gpu-project/zones/us-central1-a/instances/pool-0", "projects/gpu-project/zones/us-central1-a/instances/pool-2"}
	if !reflect.DeepEqual(body.Instances, want) || !body.SkipInstancesOnValidationError {
		t.Errorf("body: %+v, want %v and skip", body, want)
	}
	if m.target != 1 || p.NodeGroups()[0].TargetSize != 1 {
		t.Errorf("target: server %d, cache %d; want 1", m.target, p.NodeGroups()[0].TargetSize)
	}
	// The deleting nodes still map to their group while they shut down.
	if g, _ := p.NodeGroupForNode(nodes[0]); g != migURL("pool") {
		t.Errorf("deleting node maps to %q", g)
	}
}

func TestDeleteNodesRefusesBadRequests(t *testing.T) {
	e, _, p := poolEnv(t, 2, 1, 5)
	cases := map[string][]*v1.Node{
		"below min 1":                      {node("a", providerID("pool-0")), node("b", providerID("pool-1"))},
		"is not an instance":               {node("x", providerID("elsewhere-0"))},
		"want gce://PROJECT/ZONE/INSTANCE": {node("y", "aws:///us-east-1a/i-1")},
	}
	for want, nodes := range cases {
		err := p.DeleteNodes(context.Background(), migURL("pool"), nodes)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	if n := len(e.f.callsOf("")); n != 0 {
		t.Errorf("%d calls for refused deletions", n)
	}
}

func TestStuckCreatingInstancesProvisioningTimeout(t *testing.T) {
	e := newEnv(t)
	tmpl := e.f.addTemplate(testProject, "t", props("a2-highgpu-1g").build())
	m := e.f.addMIG(testProject, testZone, "a100", tmpl, 2)
	m.add("CREATING", "")
	m.add("CREATING", "PROVISIONING")
	m.target = 4
	p := e.provider(t, Options{NodeGroups: []NodeGroupSpec{{Max: 8, URL: migURL("a100")}}})
	refresh(t, p)
	if got := p.NodeGroups()[0].TargetSize; got != 4 {
		t.Fatalf("target %d, want 4 (stuck instances count until the autoscaler gives up)", got)
	}
	if fc := p.FailedCreations(); len(fc) != 0 {
		t.Errorf("no creation error yet, got %+v", fc)
	}
	e.f.resetCalls()
	// The autoscaler's provisioning timeout lowers the target by the two:
	// exactly the instances being created go, never a running one.
	if err := p.DecreaseTargetSize(context.Background(), migURL("a100"), 2); err != nil {
		t.Fatal(err)
	}
	calls := e.f.callsOf("")
	if len(calls) != 2 || calls[0].Kind != "deleteInstances" || calls[1].Kind != "wait" {
		t.Fatalf("calls: %+v, want deleteInstances and its wait", calls)
	}
	wantBody := `{"instances":["projects/gpu-project/zones/us-central1-a/instances/a100-2","projects/gpu-project/zones/us-central1-a/instances/a100-3"],"skipInstancesOnValidationError":true}`
	if strings.TrimSpace(calls[0].Body) != wantBody {
		t.Errorf("body:\n got %s\nwant %s", calls[0].Body, wantBody)
	}
	if m.target != 2 || p.NodeGroups()[0].TargetSize != 2 {
		t.Errorf("target: server %d, cache %d; want 2", m.target, p.NodeGroups()[0].TargetSize)
	}
	for _, mi := range m.instances[:2] {
		if mi.CurrentAction != "NONE" {
			t.Errorf("running instance %s: %s", mi.Name, mi.CurrentAction)
		}
	}
	e.f.resetCalls()
	err := p.DecreaseTargetSize(context.Background(), migURL("a100"), 1)
	if err == nil || !strings.Contains(err.Error(), "there are 0; delete nodes instead") || len(e.f.callsOf("")) != 0 {
		t.Errorf("decrease into created instances: %v, %d calls", err, len(e.f.callsOf("")))
	}
}

func TestCapacityErrorsAreReportedOnce(t *testing.T) {
	e := newEnv(t)
	tmpl := e.f.addTemplate(testProject, "t", props("a2-highgpu-1g").build())
	m := e.f.addMIG(testProject, testZone, "a100", tmpl, 1)
	p := e.provider(t, Options{NodeGroups: []NodeGroupSpec{{Max: 8, URL: migURL("a100")}}})
	refresh(t, p)
	if err := p.IncreaseSize(context.Background(), migURL("a100"), 2); err != nil {
		t.Fatal(err)
	}
	for _, mi := range m.instances[1:] {
		setLastAttempt(mi, CodeZoneResourcePoolExhausted, "The zone 'projects/gpu-project/zones/us-central1-a' does not have enough resources available to fulfill the request.")
	}
	e.clock.Step(time.Minute)
	refresh(t, p)
	got := p.FailedCreations()
	want := []cloudprovider.FailedCreations{{Group: migURL("a100"), Count: 2, Class: cloudprovider.ErrorOutOfResources,
		Code: CodeZoneResourcePoolExhausted, Message: m.instances[1].LastAttempt.Errors.Errors[0].Message}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("failed creations:\n got %+v\nwant %+v", got, want)
	}
	if again := p.FailedCreations(); len(again) != 0 {
		t.Errorf("reported twice: %+v", again)
	}
	// The MIG keeps retrying with the same error: still not reported again.
	e.clock.Step(time.Minute)
	refresh(t, p)
	if again := p.FailedCreations(); len(again) != 0 {
		t.Errorf("same failure reported after a refresh: %+v", again)
	}
	// One of them now fails on quota instead: a new failure, class Quota.
	setLastAttempt(m.instances[2], CodeQuotaExceeded, "Quota 'NVIDIA_A100_GPUS' exceeded. Limit: 8.0 in region us-central1.")
	e.clock.Step(time.Minute)
	refresh(t, p)
	got = p.FailedCreations()
	if len(got) != 1 || got[0].Class != cloudprovider.ErrorQuota || got[0].Count != 1 || got[0].Code != CodeQuotaExceeded {
		t.Fatalf("quota failure: %+v", got)
	}
	// The loop backs off and lowers the target by the failed creations,
	// which deletes the failed instances.
	if err := p.DecreaseTargetSize(context.Background(), migURL("a100"), 2); err != nil {
		t.Fatal(err)
	}
	if m.target != 1 || m.instances[0].CurrentAction != "NONE" || m.instances[1].CurrentAction != "DELETING" || m.instances[2].CurrentAction != "DELETING" {
		t.Errorf("after lowering: target %d, instances %+v", m.target, m.instances)
	}
}

// setLastAttempt records a failed creation attempt as the MIG does.
func setLastAttempt(mi *compute.ManagedInstance, code, msg string) {
	mi.LastAttempt = &compute.ManagedInstanceLastAttempt{Errors: &compute.ManagedInstanceLastAttemptErrors{
		Errors: []*compute.ManagedInstanceLastAttemptErrorsErrors{{Code: code, Message: msg}},
	}}
}

func TestClassify(t *testing.T) {
	cases := map[string]string{
		CodeZoneResourcePoolExhausted:            cloudprovider.ErrorOutOfResources,
		CodeZoneResourcePoolExhaustedWithDetails: cloudprovider.ErrorOutOfResources,
		CodeQuotaExceeded:                        cloudprovider.ErrorQuota,
		"RESOURCE_NOT_FOUND":                     cloudprovider.ErrorOther,
	}
	for code, want := range cases {
		if got := classify(code); got != want {
			t.Errorf("classify(%s) = %s, want %s", code, got, want)
		}
	}
}

func TestDecreaseTargetSizeDeletesFailedCreationsFirst(t *testing.T) {
	e := newEnv(t)
	tmpl := e.f.addTemplate(testProject, "t", props("g2-standard-4").build())
	m := e.f.addMIG(testProject, testZone, "l4", tmpl, 1)
	m.add("CREATING", "")                                                                         // l4-1: still trying, no error
	setLastAttempt(m.add("CREATING", ""), CodeZoneResourcePoolExhaustedWithDetails, "no L4 left") // l4-2
	m.target = 3
	p := e.provider(t, Options{NodeGroups: []NodeGroupSpec{{Max: 4, URL: migURL("l4")}}})
	refresh(t, p)
	if fc := p.FailedCreations(); len(fc) != 1 || fc[0].Count != 1 || fc[0].Class != cloudprovider.ErrorOutOfResources {
		t.Fatalf("failed creations: %+v", fc)
	}
	if err := p.DecreaseTargetSize(context.Background(), migURL("l4"), 1); err != nil {
		t.Fatal(err)
	}
	if m.instances[2].CurrentAction != "DELETING" || m.instances[1].CurrentAction != "CREATING" {
		t.Errorf("want the failed l4-2 deleted, l4-1 kept: %s %s", m.instances[1].CurrentAction, m.instances[2].CurrentAction)
	}
}
