package trace

import (
	"math"
	"strings"
	"testing"
	"time"
)

func jobBatches(t *testing.T, name, csv, columns string) (map[string][][2]time.Duration, JobStats) {
	t.Helper()
	cols, err := ParseJobColumns(columns)
	if err != nil {
		t.Fatal(err)
	}
	ws, st, err := Jobs(name, strings.NewReader(csv), cols)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][2]time.Duration{}
	for _, w := range ws {
		for _, b := range w.Jobs {
			out[w.Name] = append(out[w.Name], [2]time.Duration{b.At.Duration, b.Duration.Duration})
		}
	}
	return out, st
}

// Many public traces print times as date-times; they are read as such.
func TestJobsReadDateTimes(t *testing.T) {
	const csv = `id,start,stop,gpu
a,2017-10-09 07:01:55,2017-10-09 08:01:55,1
b,2017-10-09T07:02:55Z,2017-10-09T07:12:55.5+00:00,1
c,2017-10-09 07:03:55.250,2017-10-09 07:04:55.250 +0000,1
`
	got, st := jobBatches(t, "jobs.csv", csv, "submit=start,end=stop,gpus=gpu")
	want := [][2]time.Duration{{0, time.Hour}, {time.Minute, 10*time.Minute + 500*time.Millisecond}, {2*time.Minute + 250*time.Millisecond, time.Minute}}
	jobs := got["job-c0-m0-g1"]
	if len(jobs) != 3 || st.Jobs != 3 {
		t.Fatalf("jobs %v (stats %+v), want 3", got, st)
	}
	for i, w := range want {
		if jobs[i] != w {
			t.Errorf("job %d: submitted at %s for %s, want %s for %s", i, jobs[i][0], jobs[i][1], w[0], w[1])
		}
	}
}

func TestAlibabaAndAzureReadDateTimes(t *testing.T) {
	const pods = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,1000,1024,1,1000,,LS,Running,2023-01-01T00:00:00Z,2023-01-01T01:00:00Z,2023-01-01T00:00:10Z
p1,1000,1024,1,1000,,LS,Running,2023-01-01 00:10:00,2023-01-01 00:20:00,
`
	ws, st, err := AlibabaPods("pods.csv", strings.NewReader(pods), AlibabaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Pods != 2 || len(ws) != 1 || ws[0].Jobs[1].At.Duration != 10*time.Minute || ws[0].Jobs[0].Duration.Duration != time.Hour-10*time.Second {
		t.Errorf("pods %+v, stats %+v", ws, st)
	}
	const azure = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16T18:17:00Z,1,1\n2023-11-16T18:18:30.5Z,1,1\n"
	pts, err := AzureLoad("azure.csv", strings.NewReader(azure), AzureOptions{})
	if err != nil || len(pts) != 3 || pts[1].Value != 1.0/60 {
		t.Errorf("RFC 3339 Azure trace: %v, %v", pts, err)
	}
}

func TestMixedTimeFormsAreRefused(t *testing.T) {
	cols, _ := ParseJobColumns("submit=start,end=stop")
	_, _, err := Jobs("jobs.csv", strings.NewReader("start,stop\n100,200\n2017-10-09 07:01:55,300\n"), cols)
	if err == nil || !strings.Contains(err.Error(), "jobs.csv:3:1: column start: a date-time, but line 2 (column start) holds a number") {
		t.Errorf("mixed forms: %v", err)
	}
	_, _, err = Jobs("jobs.csv", strings.NewReader("start,stop\n100,yesterday\n"), cols)
	if err == nil || !strings.Contains(err.Error(), `jobs.csv:2:5: column stop: not a number (in seconds) or a date-time`) {
		t.Errorf("bad time: %v", err)
	}
}

// Rows still running at the end of a trace (an empty end) run to its end;
// rows left out are counted by reason with their lines.
func TestOpenRowsRunToTheEndAndSkipsAreReported(t *testing.T) {
	const csv = `id,start,stop,gpu
a,0,100,1
b,50,,1
c,60,60,1
d,,80,1
e,70,65,1
f,20,500,0
`
	got, st := jobBatches(t, "jobs.csv", csv, "submit=start,end=stop,gpus=gpu")
	if b := got["job-c0-m0-g1"]; len(b) != 2 || b[1] != [2]time.Duration{50 * time.Second, 450 * time.Second} {
		t.Errorf("GPU jobs %v, want b running from 50s to the trace's end at 500s", b)
	}
	if st.RunningAtEnd != 1 || st.Jobs != 3 {
		t.Errorf("stats %+v, want 1 running at the end, 3 jobs", st)
	}
	want := "3 rows skipped: 2 with no run time (end at or before submit) (lines 4, 6); 1 with no submit time (line 5)"
	if st.Skipped.String() != want {
		t.Errorf("skipped %q, want %q", st.Skipped, want)
	}
	got, st = jobBatches(t, "jobs.csv", "start,runtime\n0,10\n5,\n", "submit=start,duration=runtime")
	if b := got["job-c0-m0-g0"]; len(b) != 2 || b[1][1] != 5*time.Second || st.RunningAtEnd != 1 {
		t.Errorf("empty duration: %v %+v, want the second job to run to the end (10s)", b, st)
	}

	const pods = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,1000,1024,1,1000,,LS,Running,0,1000,0
p1,1000,1024,1,1000,,LS,Running,400,,500
p2,1000,1024,1,1000,,LS,Failed,600,600,600
p3,1000,1024,1,1000,,LS,Pending,,700,
`
	ws, ast, err := AlibabaPods("pods.csv", strings.NewReader(pods), AlibabaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ast.Pods != 2 || ast.RunningAtEnd != 1 || ws[0].Jobs[1].Duration.Duration != 500*time.Second {
		t.Errorf("pods %+v, stats %+v; want p1 running from its scheduling (500) to the trace's end (1000)", ws, ast)
	}
	want = "2 rows skipped: 1 with no creation time (line 5); 1 with no run time (deleted when created or scheduled) (line 4)"
	if ast.Skipped.String() != want {
		t.Errorf("skipped %q, want %q", ast.Skipped, want)
	}
}

// Bad cells are refused naming file:line:column and the column, never a
// field derived from them.
func TestBadCellsNameFileLineAndColumn(t *testing.T) {
	cols, _ := ParseJobColumns("submit=start,end=stop,gpus=gpu,cpu=cores,memory=mem")
	for _, tc := range []struct{ csv, want string }{
		{"start,stop,gpu,cores,mem\n0,10,1.5,1,1\n", "jobs.csv:2:6: column gpu: a GPU count must be a whole number, got 1.5"},
		{"start,stop,gpu,cores,mem\n0,10,1,-2,1\n", "jobs.csv:2:8: column cores: a cpu request must not be negative, got -2"},
		{"start,stop,gpu,cores,mem\n0,10,1,2,NaN\n", `jobs.csv:2:10: column mem: not a number: "NaN"`},
		{"start,stop,gpu,cores,mem\n0,+Inf,1,2,1\n", `jobs.csv:2:3: column stop: not a number: "+Inf"`},
		{"start,stop,gpu,cores,mem\n\"0\n\",10,1,2,1\n0,10,x,1,1\n", "jobs.csv:4:6: column gpu: not a number"},
	} {
		_, _, err := Jobs("jobs.csv", strings.NewReader(tc.csv), cols)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.csv, err, tc.want)
		}
	}
	milli, _ := ParseJobColumns("submit=start,duration=d,cpu=c,cpu-unit=milli")
	if _, _, err := Jobs("jobs.csv", strings.NewReader("start,d,c\n0,1,250.5\n"), milli); err == nil || !strings.Contains(err.Error(), "jobs.csv:2:5: column c: a cpu request must be a whole number") {
		t.Errorf("fractional milli-cores: %v", err)
	}
	const node = "sn,cpu_milli,memory_mib,gpu,model\nn0,96000,393216,0.5,G2\n"
	if _, err := AlibabaNodeGroups("nodes.csv", strings.NewReader(node), DefaultPrices()); err == nil ||
		!strings.Contains(err.Error(), "nodes.csv:2:17: column gpu: a GPU count must be a whole number, got 0.5") {
		t.Errorf("fractional node GPUs: %v", err)
	}
	for _, tc := range []struct{ csv, want string }{
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,-5,1\n", "azure.csv:2:21: column ContextTokens: a token count must not be negative, got -5"},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,5,2.5\n", "azure.csv:2:23: column GeneratedTokens: a token count must be a whole number, got 2.5"},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n,5,2\n", "azure.csv:2:1: column TIMESTAMP: empty"},
	} {
		if _, err := AzureLoad("azure.csv", strings.NewReader(tc.csv), AzureOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.csv, err, tc.want)
		}
	}
}

// One backwards timestamp in a request log used to be sorted into place
// silently, stretching the curve over decades: it is refused with its line.
func TestAzureOutOfOrderAndOverlongTracesAreRefused(t *testing.T) {
	const backwards = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,1,1\n2023-11-16 18:18:00,1,1\n1990-01-01 00:00:00,1,1\n"
	_, err := AzureLoad("azure.csv", strings.NewReader(backwards), AzureOptions{})
	if err == nil || !strings.Contains(err.Error(),
		"azure.csv:4:1: column TIMESTAMP: 1990-01-01 00:00:00 is before the previous request's 2023-11-16 18:18:00 (line 3): the trace must be in time order") {
		t.Errorf("backwards row: %v", err)
	}
	const decades = "TIMESTAMP,ContextTokens,GeneratedTokens\n1990-01-01 00:00:00,1,1\n2023-11-16 18:18:00,1,1\n"
	_, err = AzureLoad("azure.csv", strings.NewReader(decades), AzureOptions{MaxSpan: 366 * 24 * time.Hour})
	if err == nil || !strings.Contains(err.Error(), "azure.csv:3:1: column TIMESTAMP: 2023-11-16 18:18:00 is") ||
		!strings.Contains(err.Error(), "after the first request (line 2), more than the 8784h0m0s a trace may span") {
		t.Errorf("overlong trace: %v", err)
	}
	if _, err := AzureLoad("azure.csv", strings.NewReader(decades), AzureOptions{Bucket: -time.Minute}); err == nil || !strings.Contains(err.Error(), "bucket: must be positive") {
		t.Errorf("negative bucket: %v", err)
	}
}

func TestAlibabaTimeScaleMustBePositive(t *testing.T) {
	for _, s := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, _, err := AlibabaPods("pods.csv", strings.NewReader(podList), AlibabaOptions{TimeScale: s}); err == nil || !strings.Contains(err.Error(), "time scale must be positive and finite") {
			t.Errorf("time scale %v: %v", s, err)
		}
	}
}

// One line over the limit is refused with the file and its line, before
// encoding/csv buffers it whole.
func TestTraceLineOverTheLimitIsRefused(t *testing.T) {
	long := "start,runtime,gpus\n0,10,1\n" + strings.Repeat("9", 1<<20+1) + ",10,1\n"
	cols, err := ParseJobColumns("submit=start,duration=runtime,gpus=gpus")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Jobs("jobs.csv", strings.NewReader(long), cols)
	if err == nil || !strings.Contains(err.Error(), "jobs.csv: line 3: longer than the 1 MiB limit for one line") {
		t.Errorf("a 1 MiB + 1 line: %v; want it refused naming the file, the line and the limit", err)
	}
	_, err = AlibabaNodeGroups("nodes.csv", strings.NewReader("sn,cpu_milli,memory_mib,num_gpu,gpu_model\n"+strings.Repeat("n", 2<<20)), DefaultPrices())
	if err == nil || !strings.Contains(err.Error(), "nodes.csv: line 2: longer than the 1 MiB limit") {
		t.Errorf("a 2 MiB line: %v", err)
	}
}
