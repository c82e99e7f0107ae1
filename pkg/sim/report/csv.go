package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
)

// WriteCSV writes a result's time series: one row per sample with the time
// in seconds, the billed nodes of each group, pending pods, GPUs allocated
// and provisioned, each Deployment's replicas, each serving Deployment's
// requests waiting for a first token and replicas serving, and the cost
// so far.
func WriteCSV(w io.Writer, res *engine.Result) error {
	s := &res.Series
	cw := csv.NewWriter(w)
	header := []string{"time_s"}
	for _, g := range s.Groups {
		header = append(header, "nodes_"+g)
	}
	header = append(header, "pending_pods", "gpus_allocated", "gpus_provisioned")
	for _, d := range s.Deployments {
		header = append(header, "replicas_"+d)
	}
	for _, d := range s.Serving {
		header = append(header, "waiting_requests_"+d, "serving_replicas_"+d)
	}
	header = append(header, "cost_dollars")
	if err := cw.Write(header); err != nil {
		return err
	}
	for i, t := range s.Times {
		row := make([]string, 0, len(header))
		row = append(row, strconv.FormatFloat(t.Seconds(), 'f', -1, 64))
		for _, n := range s.Nodes[i] {
			row = append(row, strconv.Itoa(n))
		}
		row = append(row, strconv.Itoa(s.Pending[i]), strconv.FormatInt(s.GPUsAllocated[i], 10),
			strconv.FormatInt(s.GPUsProvisioned[i], 10))
		for _, r := range s.Replicas[i] {
			row = append(row, strconv.Itoa(r))
		}
		for j := range s.Serving {
			row = append(row, strconv.Itoa(s.Waiting[i][j]), strconv.Itoa(s.ServingReady[i][j]))
		}
		row = append(row, fmt.Sprintf("%.4f", s.Cost[i]))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
