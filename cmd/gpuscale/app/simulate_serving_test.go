package app

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func examplePath(t *testing.T, rel string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..", rel)
}

// A request trace in a mapped CSV feeds the serving example, and two HPA
// policies run side by side with their serving measures.
func TestSimulateServingRequestsAndPolicies(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "reqs.csv")
	var b strings.Builder
	b.WriteString("ms,prompt,completion\n")
	for i := 0; i < 300; i++ {
		b.WriteString(strings.Join([]string{strconv.Itoa(i * 500), "12000", "300"}, ",") + "\n")
	}
	if err := os.WriteFile(trace, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, "simulate", "--scenario", examplePath(t, "examples/sim/llm-serving-slo.yaml"), "--no-progress",
		"--requests", trace, "--requests-format", "csv", "--requests-columns", "time=ms,input=prompt,output=completion,time-unit=ms",
		"--compare", "policy=gpu-utilization", "--compare", "policy=queue-depth")
	if err != nil {
		t.Fatalf("simulate: %v\n%s", err, out)
	}
	for _, want := range []string{"policy=gpu-utilization", "policy=queue-depth", "default/llm TTFT p50 / p90 / p99",
		"default/llm within SLO (2.000s)", "of 300 (0 refused)", "default/llm GPU-hours / idle / work"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	_, err = execute(t, "simulate", "--scenario", examplePath(t, "examples/sim/llm-serving-slo.yaml"), "--no-progress",
		"--compare", "policy=warm")
	if err == nil || !strings.Contains(err.Error(), `policy "warm": no Deployment of scenario llm-serving-slo has it (policies: gpu-utilization, in-flight, queue-depth)`) {
		t.Errorf("an unknown policy: %v", err)
	}
	_, err = execute(t, "simulate", "--builtin", "seed-walkthrough", "--no-progress", "--requests", trace, "--requests-format", "csv",
		"--requests-columns", "time=ms,input=prompt,output=completion")
	if err == nil || !strings.Contains(err.Error(), "--requests: --requests-workload: no serving Deployment") {
		t.Errorf("requests for a scenario without serving: %v", err)
	}
}

// --requests replaces a serving Deployment's bursts as it replaces its
// listed requests: the trace's 5 requests are all the batch model gets.
func TestSimulateRequestsReplaceBursts(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "reqs.csv")
	if err := os.WriteFile(trace, []byte("s,in,out\n0,100,10\n1,100,10\n2,100,10\n3,100,10\n4,100,10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, "simulate", "--scenario", examplePath(t, "examples/sim/llm-multi-model-zero.yaml"), "--no-progress",
		"--requests", trace, "--requests-format", "csv", "--requests-columns", "time=s,input=in,output=out,time-unit=s",
		"--requests-workload", "batch")
	if err != nil {
		t.Fatalf("simulate: %v\n%s", err, out)
	}
	for _, want := range []string{"default/batch within SLO (2.000s)", "of 5 (0 refused)", "of 1202 (0 refused)"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}
