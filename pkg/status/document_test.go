package status_test

import (
	"testing"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// gpuscale's status carries safeToAutoscale whatever its value, so a
// reader can tell it from the upstream autoscaler's of the same name.
func TestWrittenByGpuscale(t *testing.T) {
	for _, safe := range []bool{true, false} {
		_, text := status.Render(status.Status{Cluster: status.Cluster{Health: status.Health{Safe: safe}}}, nil, status.DefaultRenderOptions())
		if !status.WrittenByGpuscale(text) {
			t.Errorf("a status rendered with safe %v is not recognised:\n%s", safe, text)
		}
	}
	for _, text := range []string{"autoscalerStatus: Running\nclusterWide: {health: {status: Healthy}}\n",
		"Cluster-autoscaler status at 2018-07-25 22:59:22 +0000 UTC:\nCluster-wide:\n  Health: Healthy (ready=1)\n", ""} {
		if status.WrittenByGpuscale(text) {
			t.Errorf("%q is taken for gpuscale's", text)
		}
	}
}
