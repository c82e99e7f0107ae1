package trace

import (
	"strings"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// With gpus-per-node, a job of G GPUs beyond a node's k becomes a gang of
// ceil(G/k) pods sharing its GPUs, cpu and memory (rounded up); a job that
// fits one node stays one pod.
func TestJobsSplitMultiNodeJobsIntoGangs(t *testing.T) {
	const csv = `id,start,duration,gpu,cores,mem
a,0,3600,32,64,1024
b,10,3600,12,20,300
c,20,60,8,8,64
d,30,60,0,1,1
`
	cols, err := ParseJobColumns("submit=start,duration=duration,gpus=gpu,cpu=cores,memory=mem,gpus-per-node=8")
	if err != nil {
		t.Fatal(err)
	}
	ws, st, err := Jobs("jobs.csv", strings.NewReader(csv), cols)
	if err != nil {
		t.Fatal(err)
	}
	type shape struct{ gpus, count, gang int }
	got := map[string]shape{}
	for _, w := range ws {
		if len(w.Jobs) != 1 {
			t.Fatalf("%s: %d batches, want 1", w.Name, len(w.Jobs))
		}
		q := w.Pod.Requests[gpu.ResourceName]
		got[w.Name] = shape{int(q.Value()), w.Jobs[0].Count, w.Jobs[0].Gang}
	}
	want := map[string]shape{
		"job-c16000-m256-g8-x4": {8, 4, 4}, // 32 GPUs: 4 pods of 8
		"job-c10000-m150-g6-x2": {6, 2, 2}, // 12 GPUs: 2 pods of 6
		"job-c8000-m64-g8":      {8, 1, 0}, // one node's worth: one pod
		"job-c1000-m1-g0":       {0, 1, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("workloads %v, want %v", got, want)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %+v, want %+v", name, got[name], w)
		}
	}
	if st.Gangs != 2 || st.Jobs != 4 {
		t.Errorf("stats %+v, want 4 jobs of which 2 gangs", st)
	}
}

func TestJobsGangColumnsRefused(t *testing.T) {
	for bad, want := range map[string]string{
		"submit=s,duration=d,gpus=g,gpus-per-node=0":   "gpus-per-node: want a positive whole number, got \"0\"",
		"submit=s,duration=d,gpus=g,gpus-per-node=1.5": "gpus-per-node: want a positive whole number",
		"submit=s,duration=d,gpus-per-node=8":          "gpus-per-node: needs the gpus column",
	} {
		if _, err := ParseJobColumns(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
	cols, err := ParseJobColumns("submit=s,duration=d,gpus=g,gpus-per-node=1")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Jobs("jobs.csv", strings.NewReader("s,d,g\n0,60,8\n0,60,20000\n"), cols)
	if err == nil || !strings.Contains(err.Error(), "jobs.csv:3: column g: a job of 20000 GPUs on nodes of 1 would be 20000 pods; at most 10000") {
		t.Errorf("a job of 20000 pods: %v", err)
	}
}
