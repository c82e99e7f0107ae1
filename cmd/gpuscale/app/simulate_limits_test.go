package app

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// executeSplit runs the command tree and returns stdout and stderr apart.
func executeSplit(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := NewRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestSimulateRefusesBadValuesNamingTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--azure-bucket=0s"}, "--azure-bucket: must be at least 1s, got 0s"},
		{[]string{"--azure-bucket=-1m"}, "--azure-bucket: must be at least 1s, got -1m0s"},
		{[]string{"--azure-bucket=1ns"}, "--azure-bucket: must be at least 1s, got 1ns"},
		{[]string{"--time-scale=0"}, "--time-scale: must be positive and finite, got 0"},
		{[]string{"--time-scale=-2"}, "--time-scale: must be positive and finite, got -2"},
		{[]string{"--time-scale=NaN"}, "--time-scale: must be positive and finite, got NaN"},
		{[]string{"--time-scale=+Inf"}, "--time-scale: must be positive and finite, got +Inf"},
		{[]string{"--max-memory=lots"}, `--max-memory: want a quantity of bytes such as 8Gi or 512Mi (0: no bound), got "lots"`},
		{[]string{"--max-virtual-time=-1h"}, "--max-virtual-time: must not be negative, got -1h0m0s"},
		{[]string{"--duration=48h", "--max-virtual-time=24h"}, "--max-virtual-time 24h0m0s: scenario seed-walkthrough runs for 48h0m0s"},
		{[]string{"--compare=expander=price", "--compare="}, `--compare: 2 is empty; give the settings of that run as --set takes them (expander=price), got ""`},
		{[]string{"--compare", " , "}, `--compare: 1 is empty`},
	} {
		out, err := execute(t, append([]string{"simulate", "--builtin", "seed-walkthrough", "--no-progress", "--quiet"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("simulate %v: err = %v, want %q\n%s", tc.args, err, tc.want, out)
		}
	}
}

const groupsScenario = `name: jobs
nodeGroups:
- name: gpu
  maxSize: 4
  pricePerHour: 1
  capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1"}
workloads: []
`

func TestSimulateJobsTraceErrorsAndNotes(t *testing.T) {
	dir := t.TempDir()
	scenarioPath := filepath.Join(dir, "groups.yaml")
	if err := os.WriteFile(scenarioPath, []byte(groupsScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.csv", "submit,duration,gpus\n0,600,1\n60,600,0.5\n")
	_, _, err := executeSplit(t, "simulate", "--scenario", scenarioPath, "--jobs", bad, "--jobs-columns", "submit=submit,duration=duration,gpus=gpus", "--no-progress", "--quiet")
	if err == nil || !strings.Contains(err.Error(), "--jobs: bad.csv:3:8: column gpus: a GPU count must be a whole number, got 0.5") {
		t.Errorf("fractional GPUs: %v", err)
	}
	good := write("jobs.csv", "submit,duration,gpus\n0,600,1\n60,,1\n,600,1\n120,0,1\n")
	_, stderr, err := executeSplit(t, "simulate", "--scenario", scenarioPath, "--jobs", good, "--jobs-columns", "submit=submit,duration=duration,gpus=gpus", "--no-progress", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"warning: --jobs jobs.csv: 2 rows skipped: 1 with no run time (end at or before submit) (line 5); 1 with no submit time (line 4)",
		"warning: --jobs jobs.csv: 1 job(s) with no end run to the end of the trace",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	azure := write("azure.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n1990-01-01 00:00:00,1,1\n2023-11-16 18:18:00,1,1\n")
	_, _, err = executeSplit(t, "simulate", "--azure", azure, "--no-progress", "--quiet")
	if err == nil || !strings.Contains(err.Error(), "--azure: the trace spans too long: azure.csv:3:1: column TIMESTAMP") ||
		!strings.Contains(err.Error(), "--max-virtual-time 8784h0m0s") {
		t.Errorf("overlong Azure trace: %v", err)
	}
}

// SIGINT (or SIGTERM) stops a run promptly; the summary of what was
// simulated so far is printed and the command fails saying so.
func TestSimulateStopsOnSIGINTWithAPartialReport(t *testing.T) {
	// Keep the test process alive whatever the timing: while a channel is
	// registered for SIGINT, its default action (exit) is off.
	own := make(chan os.Signal, 16)
	signal.Notify(own, syscall.SIGINT)
	defer signal.Stop(own)

	type result struct {
		out, stderr string
		err         error
	}
	done := make(chan result, 1)
	go func() {
		out, stderr, err := executeSplit(t, "simulate", "--builtin", "seed-walkthrough", "--no-progress",
			"--duration", "8000h", "--every-loop")
		done <- result{out, stderr, err}
	}()
	deadline := time.After(2 * time.Minute)
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			if r.err == nil || !strings.Contains(r.err.Error(), "interrupted") || !strings.Contains(r.err.Error(), "stopped at virtual time") {
				t.Fatalf("err = %v, want the run stopped by the interrupt", r.err)
			}
			if !strings.Contains(r.out, "cost / lower bound") {
				t.Errorf("no summary of the partial run:\n%s", r.out)
			}
			if !strings.Contains(r.stderr, "stopped at virtual time") || !strings.Contains(r.stderr, "its figures cover 0 to") {
				t.Errorf("stderr does not say the run was partial:\n%s", r.stderr)
			}
			return
		case <-tick.C: // again until it stops: the first may come before the run listens
			_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
		case <-deadline:
			t.Fatal("simulate did not stop within 2 minutes of SIGINT")
		}
	}
}
