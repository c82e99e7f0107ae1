package explain

import (
	"context"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// The cluster view lists each CapacityBuffer and where its chunks found
// room; the node view says which buffers keep a node; a pending pod hears
// that the buffers' room is its to take.
func TestCapacityBuffersInEveryView(t *testing.T) {
	st := loop()
	st.Buffers = []status.Buffer{
		{Namespace: "serving", Name: "warm", Replicas: 3, Fit: 1, ScaleUp: 1, NoRoom: 1, Nodes: []string{"gpu-2"},
			Reason: "MaxNodeGroupSizeReached", Message: "node group gpu is at its maximum size 4"},
	}
	st.Nodes = append(st.Nodes, status.Node{Name: "gpu-2", Group: "gpu", State: status.NodeKept, Reason: "NoPlaceToMovePods",
		Message: "pod serving/capacitybuffer:warm:0 fits on no other node (Insufficient nvidia.com/gpu)",
		Pod:     &status.Ref{Namespace: "serving", Name: "capacitybuffer:warm:0"}, Buffers: []string{"serving/warm"}})
	e := explainer(t, nil, rendered(t, st), builder.Node("gpu-2").Build(), unschedulable(builder.Pod("t-0").Namespace("ml").Build()))
	ctx := context.Background()

	r, err := e.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "capacity buffer serving/warm: 3 chunk(s); 1 with room on nodes (gpu-2); 1 on nodes this loop adds; "+
		"1 without room: node group gpu is at its maximum size 4 (MaxNodeGroupSizeReached)")
	if len(r.Cluster.CapacityBuffers) != 1 {
		t.Errorf("structured answer lists buffers %+v", r.Cluster.CapacityBuffers)
	}

	r, err = e.Node(ctx, "gpu-2")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "holds the room of CapacityBuffer(s) serving/warm")
	if len(r.Node.Buffers) != 1 || r.Node.Buffers[0] != "serving/warm" {
		t.Errorf("structured answer buffers %v", r.Node.Buffers)
	}

	r, err = e.Pod(ctx, pod("ml", "t-0"))
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "1 chunk(s) of CapacityBuffers hold room on nodes; real pods take it before them")
}

// The cluster view says why each inference workload's warm capacity has
// its size, from the status the loop wrote.
func TestForecastsInTheClusterView(t *testing.T) {
	st := loop()
	st.Forecasts = []status.Forecast{{Namespace: "serving", Name: "llm", Buffer: "forecast-llm", Demand: 14, Forecast: 31.6,
		ForecastReplicas: 8, Running: 6, Replicas: 2,
		Message: "forecast 31.6 (level 14.9, trend +0.000/s, headroom 16.7) at +2m0s = 8 replicas at 4.0 each; 6 running; buffer 2"}}
	e := explainer(t, nil, rendered(t, st))
	r, err := e.Cluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, r, "warm capacity of serving/llm: 2 replica(s) held as capacity buffer serving/forecast-llm: forecast 31.6 (level 14.9")
	if len(r.Cluster.Forecasts) != 1 || r.Cluster.Forecasts[0].Replicas != 2 {
		t.Errorf("structured answer forecasts %+v", r.Cluster.Forecasts)
	}
}
