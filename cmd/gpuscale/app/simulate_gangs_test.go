package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A jobs CSV of multi-node jobs (32 and 12 GPUs on 8-GPU nodes) runs every
// job with gpus-per-node, whether the gangs ask through ProvisioningRequests
// or not; without it the multi-node jobs never run.
func TestSimulateJobsCSVGangs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sc := write("groups.yaml", `
name: eight-gpu
provisioningDelay: 3m
nodeGroups:
- name: gpu8
  maxSize: 8
  pricePerHour: 30
  capacity: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8"}
workloads: []
`)
	jobs := write("jobs.csv", "submit,duration,gpus\n0,3600,32\n60,3600,12\n120,600,1\n")
	cols := "submit=submit,duration=duration,gpus=gpus"
	for _, tc := range []struct {
		columns, label, value string
	}{
		{cols + ",gpus-per-node=8", "gang jobs / never started", "2 / 0"},
		{cols, "pods submitted / never scheduled", "3 / 2"},
	} {
		out, _, err := executeSplit(t, "simulate", "--scenario", sc, "--jobs", jobs, "--jobs-columns", tc.columns, "--no-progress",
			"--compare", "enable-provisioning-requests=false", "--compare", "enable-provisioning-requests=true")
		if err != nil {
			t.Fatal(err)
		}
		want := tc.label + " " + tc.value + " " + tc.value // one column per run
		found := false
		for _, l := range strings.Split(out, "\n") {
			found = found || strings.Join(strings.Fields(l), " ") == want
		}
		if !found {
			t.Errorf("--jobs-columns %s: the summary lacks %q in both runs:\n%s", tc.columns, want, out)
		}
	}
}
