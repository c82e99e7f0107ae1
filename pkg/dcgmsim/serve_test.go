package dcgmsim

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
)

func TestNewRefusesAnInvalidNode(t *testing.T) {
	for _, node := range []string{"Gpu_Node", "gpu node", "-gpu", strings.Repeat("a", 254)} {
		_, err := New(Options{Client: fake.NewClientset(), Node: node})
		if err == nil || !strings.Contains(err.Error(), "is not a node name") {
			t.Errorf("node %q: err %v, want it refused", node, err)
		}
	}
	if _, err := New(Options{Client: fake.NewClientset(), Node: "ip-10-0-0-1.ec2.internal"}); err != nil {
		t.Errorf("a valid node name refused: %v", err)
	}
}

// syncLog is a log buffer safe to read while the simulator writes.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// "dcgm-sim serving" means the caches have synced: a scrape before that
// would report no GPUs, which Prometheus would record as real.
func TestServingIsLoggedOnlyAfterTheCachesSync(t *testing.T) {
	client := fake.NewClientset(builder.Node("gpu-a").GPU(1).Build())
	release := make(chan struct{})
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-release
		return false, nil, nil
	})
	log := &syncLog{}
	sim, err := New(Options{Client: client, Node: "gpu-b", Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	control, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Serve(ctx, metrics, control) }()

	time.Sleep(200 * time.Millisecond) // the pod list is held: nothing may be served yet
	if strings.Contains(log.String(), "serving") {
		t.Fatalf("logged serving before the pod cache synced:\n%s", log)
	}
	close(release)
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return strings.Contains(log.String(), "dcgm-sim serving"), nil }); err != nil {
		t.Fatalf("never logged serving:\n%s", log)
	}
	text := log.String()
	for _, want := range []string{"address=" + metrics.Addr().String(), "control=" + control.Addr().String(), "node=gpu-b",
		"the node does not exist (yet)"} {
		if !strings.Contains(text, want) {
			t.Errorf("log lacks %q:\n%s", want, text)
		}
	}
	resp, err := http.Get("http://" + metrics.Addr().String() + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("healthz after serving: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
