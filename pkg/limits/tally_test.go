package limits_test

import (
	"reflect"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// A Tally kept over changes sums what limits.Of sums afresh: nodes added,
// replaced with other resources (a device plugin advertising its GPUs),
// removed, and reverted.
func TestTallyFollowsTheNodes(t *testing.T) {
	s := snapshot.New()
	var tally limits.Tally
	check := func(step string) {
		t.Helper()
		if got, want := tally.Of(s), limits.Of(s); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: tally %+v, afresh %+v", step, got, want)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check("empty")
	must(s.AddNode(builder.Node("cpu").CPU("8").Memory("32Gi").Build()))
	must(s.AddNode(builder.Node("l4").CPU("16").Memory("64Gi").Label(gpu.LabelGKEAccelerator, "nvidia-l4").Build()))
	check("a GPU node before its GPUs")
	must(s.UpdateNode(builder.Node("l4").CPU("16").Memory("64Gi").GPU(4).Label(gpu.LabelGKEAccelerator, "nvidia-l4").Build(), ""))
	check("its GPUs advertised")
	s.Fork()
	must(s.AddNode(builder.Node("a100").CPU("96").Memory("1Ti").GPU(8).Label(gpu.LabelGKEAccelerator, "nvidia-tesla-a100").Build()))
	check("another type in a fork")
	must(s.RemoveNode("cpu"))
	check("a node removed")
	must(s.Revert())
	check("reverted")
	if got := tally.Of(s).GPUsByType; got["nvidia-l4"] != 4 || len(got) != 1 {
		t.Errorf("GPUs by type %v, want the 4 L4s alone", got)
	}
}
