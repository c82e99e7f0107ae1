package predicates

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// panickingAllocator stands in for an allocator bug, as v0.35's nil pool
// dereference was.
type panickingAllocator struct{}

func (panickingAllocator) Allocate(context.Context, *v1.Node, []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	var pool *struct{ name string }
	_ = pool.name
	return nil, nil
}

func TestAllocatorPanicIsAnError(t *testing.T) {
	s := snapshot.New()
	if err := s.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}); err != nil {
		t.Fatal(err)
	}
	res, err := allocateRecovering(context.Background(), panickingAllocator{}, s.Node("n"), nil)
	if err == nil || res != nil {
		t.Fatalf("allocateRecovering = %v, %v; want the panic as an error", res, err)
	}
	for _, want := range []string{"structured allocator failed", "node n", "nil pointer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
