package gce

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	testProject = "gpu-project"
	testZone    = "us-central1-a"
)

func migURL(name string) string {
	return MIGRef{Project: testProject, Zone: testZone, Name: name}.URL()
}

// props builds template properties: a machine type, optional kube-env and
// scheduling.
type propsBuilder struct{ p *compute.InstanceProperties }

func props(machineType string) *propsBuilder {
	return &propsBuilder{p: &compute.InstanceProperties{
		MachineType: machineType,
		Disks:       []*compute.AttachedDisk{{Boot: true, InitializeParams: &compute.AttachedDiskInitializeParams{DiskSizeGb: 100}}},
	}}
}

func (b *propsBuilder) kubeEnv(env string) *propsBuilder {
	b.p.Metadata = &compute.Metadata{Items: []*compute.MetadataItems{{Key: "kube-env", Value: &env}}}
	return b
}

func (b *propsBuilder) accelerators(typ string, n int64) *propsBuilder {
	b.p.GuestAccelerators = append(b.p.GuestAccelerators, &compute.AcceleratorConfig{AcceleratorType: typ, AcceleratorCount: n})
	return b
}

func (b *propsBuilder) spot() *propsBuilder {
	b.p.Scheduling = &compute.Scheduling{ProvisioningModel: "SPOT"}
	return b
}

func (b *propsBuilder) preemptible() *propsBuilder {
	b.p.Scheduling = &compute.Scheduling{Preemptible: true}
	return b
}

func (b *propsBuilder) build() *compute.InstanceProperties { return b.p }

// testProvider builds a provider on the fake with a fake clock, fast
// retries and a log buffer.
type testEnv struct {
	f     *fakeGCE
	clock *clocktesting.FakeClock
	logs  *bytes.Buffer
}

func newEnv(t *testing.T) *testEnv {
	return &testEnv{f: newFakeGCE(t), clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), logs: &bytes.Buffer{}}
}

// provider uses the fake clock for the refresh interval; retries sleep on
// the real clock (1ms), so tests that retry need no clock stepping.
func (e *testEnv) provider(t *testing.T, o Options) *Provider {
	t.Helper()
	o.Service = e.f.service()
	o.Logger = slog.New(slog.NewTextHandler(e.logs, nil))
	if o.Clock == nil {
		o.Clock = e.clock
	}
	if o.Retry.Initial == 0 {
		o.Retry = RetryOptions{Attempts: 3, Initial: time.Millisecond, Max: 4 * time.Millisecond}
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	p.api.clock = clock.RealClock{}
	return p
}

func refresh(t *testing.T, p *Provider) {
	t.Helper()
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func node(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

func providerID(instance string) string {
	return InstanceRef{Project: testProject, Zone: testZone, Name: instance}.ProviderID()
}

// gpuKubeEnv is a GKE GPU pool's kube-env: labels and the GPU taint.
const gpuKubeEnv = `ALLOCATE_NODE_CIDRS: "true"
NODE_LABELS: cloud.google.com/gke-nodepool=gpu-pool,cloud.google.com/gke-os-distribution=cos
NODE_TAINTS: nvidia.com/gpu=present:NoSchedule
`
