package trace

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// dataFile opens a file of ../shared/data (from the repository root), or
// skips the test when the data is not there.
func dataFile(t *testing.T, rel string) *os.File {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(here), "..", "..", "..", "..", "shared", "data")
	f, err := os.Open(filepath.Join(dir, rel))
	if err != nil {
		t.Skipf("trace data not available (%v); it is looked for in ../shared/data from the repository root", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// The node list holds 1,523 nodes with 6,212 GPUs (the data README).
func TestAlibabaNodeListData(t *testing.T) {
	f := dataFile(t, "alibaba-gpu-v2023/openb_node_list_all_node.csv")
	groups, err := AlibabaNodeGroups(f.Name(), f, DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	nodes, gpus := 0, int64(0)
	for _, g := range groups {
		nodes += g.MaxSize
		gpus += int64(g.MaxSize) * g.Capacity.Name("nvidia.com/gpu", "").Value()
	}
	if nodes != 1523 || gpus != 6212 {
		t.Errorf("%d nodes with %d GPUs, want 1,523 with 6,212", nodes, gpus)
	}
}

// Every one of the 8,152 pods is read or counted as skipped.
func TestAlibabaPodListData(t *testing.T) {
	f := dataFile(t, "alibaba-gpu-v2023/openb_pod_list_default.csv")
	ws, st, err := AlibabaPods(f.Name(), f, AlibabaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, w := range ws {
		n += w.PodCount()
	}
	if st.Pods+st.Skipped.Count() != 8152 || n != st.Pods {
		t.Errorf("%d pods read + %s (%d in workloads), want 8,152 in all", st.Pods, st.Skipped, n)
	}
	if days := st.Span.Hours() / 24; days < 140 || days > 150 {
		t.Errorf("submissions span %.1f days, want about 149", days)
	}
}

// 8,819 requests over 57 minutes.
func TestAzureTraceData(t *testing.T) {
	f := dataFile(t, "azure-llm-2023/AzureLLMInferenceTrace_code.csv")
	pts, err := AzureLoad(f.Name(), f, AzureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, p := range pts {
		total += p.Value * 60
	}
	if math.Round(total) != 8819 || len(pts) != 59 {
		t.Errorf("%.0f requests in %d points, want 8,819 in 58 minutes and a closing 0", total, len(pts))
	}
}
