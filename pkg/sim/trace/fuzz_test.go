package trace

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// checkWorkloads: every Job is submitted at or after 0 and runs for a
// positive time that ends before a time.Duration overflows, and no request
// is negative or over the trace limits.
func checkWorkloads(t *testing.T, ws []scenario.Workload, input string) {
	t.Helper()
	for _, w := range ws {
		for name, q := range w.Pod.Requests {
			if q.Sign() < 0 {
				t.Fatalf("%s requests %s %s from %q", w.Name, q.String(), name, input)
			}
		}
		if g := w.Pod.Requests[gpu.ResourceName]; g.Value() > maxTraceGPUs {
			t.Fatalf("%s requests %s GPUs from %q", w.Name, g.String(), input)
		}
		for _, b := range w.Jobs {
			if b.At.Duration < 0 || b.Duration.Duration <= 0 || b.Count != max(1, b.Gang) ||
				b.At.Duration+b.Duration.Duration < b.At.Duration {
				t.Fatalf("%s: job at %s for %s (count %d) from %q", w.Name, b.At.Duration, b.Duration.Duration, b.Count, input)
			}
		}
	}
}

// FuzzJobs: the jobs CSV reader never panics, and what it accepts are
// well-formed Jobs; every row is a Job or counted as skipped.
func FuzzJobs(f *testing.F) {
	f.Add(jobs, "submit=start_ms,end=end_ms,gpus=gpu,cpu=cores,memory=mem_gb,time-unit=ms,memory-unit=GiB")
	f.Add("id,start,stop,gpu\na,2017-10-09 07:01:55,2017-10-09 08:01:55,1\nb,2017-10-09T07:02:55Z,,2\n", "submit=start,end=stop,gpus=gpu")
	f.Add("start,runtime,gpus\n0,10,1\n5,,1\n,3,1\n1,-1,1\n", "submit=start,duration=runtime,gpus=gpus")
	f.Add("start,stop\n100,200\n2017-10-09 07:01:55,300\n", "submit=start,end=stop")
	f.Add("start,d,c\n0,1,250.5\n\"\n\",1,1\n", "submit=start,duration=d,cpu=c,cpu-unit=milli")
	f.Add("start,d,g,c\n0,60,32,64\n5,60,12,3\n9,60,8,1\n", "submit=start,duration=d,gpus=g,cpu=c,gpus-per-node=8")
	f.Add("start,runtime,gpus\n10,5,1\n-5,10,1\n", "submit=start,duration=runtime,gpus=gpus")
	f.Add("start,runtime,gpus,mem\n0,3.2e13,1e9,1e300\n", "submit=start,duration=runtime,gpus=gpus,memory=mem,memory-unit=GiB")
	f.Add("start,stop\n2020-01-01 00:00:00,2020-01-02 00:00:00\n2020-01-01 00:00:00,2350-01-01 00:00:00\n", "submit=start,end=stop")
	f.Fuzz(func(t *testing.T, csv, columns string) {
		cols, err := ParseJobColumns(columns)
		if err != nil {
			return
		}
		ws, st, err := Jobs("jobs.csv", strings.NewReader(csv), cols)
		if err != nil {
			return
		}
		checkWorkloads(t, ws, csv)
		n := 0 // jobs: a gang of several pods is one
		for _, w := range ws {
			for _, b := range w.Jobs {
				if b.Gang > 1 && (b.Count != b.Gang || cols.GPUsPerNode == 0) {
					t.Fatalf("a gang of %d with %d pods (gpus-per-node %d)", b.Gang, b.Count, cols.GPUsPerNode)
				}
				n += b.Count / max(1, b.Gang)
			}
		}
		rows := strings.Count(csv, "\n") // an upper bound: quoted cells may span lines
		if n != st.Jobs || n+st.Skipped.Count() > rows {
			t.Fatalf("%d jobs in workloads, stats %+v, at most %d rows: %q", n, st, rows, csv)
		}
	})
}

// FuzzAlibabaPods: the pod list reader never panics and gives well-formed
// Jobs.
func FuzzAlibabaPods(f *testing.F) {
	f.Add(podList, 2.0)
	f.Add("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\np,1,1,1,500,A|B,LS,Running,2023-01-01T00:00:00Z,,\n", 1.0)
	f.Add("name,cpu_milli\np,1\n", 0.0)
	// Numbers past what a quantity or a Duration holds.
	f.Add(podHeader+"p0,1000,1024,1,1000,,LS,Running,0,9999999999,0\np1,1000,1024,1,1000,,LS,Running,10,20,10\n", 1.0)
	f.Add(podHeader+"p0,1000,1024,1000000000,1000,,LS,Running,0,3600,0\n", 1.0)
	f.Add(podHeader+"p0,1e300,1e300,1,1000,,LS,Running,-1,3600,0\n", 1.0)
	f.Add(podHeader+"p0,1000,1024,1,1000,,LS,Running,0,3600,0\np1,1000,1024,1,1000,,LS,Running,3000000000,3000003600,3000000000\n", 1e-9)
	f.Fuzz(func(t *testing.T, csv string, scale float64) {
		ws, st, err := AlibabaPods("pods.csv", strings.NewReader(csv), AlibabaOptions{TimeScale: scale})
		if err != nil {
			return
		}
		checkWorkloads(t, ws, csv)
		if st.Span < 0 {
			t.Fatalf("negative span %s from %q", st.Span, csv)
		}
	})
}

// FuzzAlibabaNodeGroups: the node list reader never panics, and every
// group has whole, non-negative capacity.
func FuzzAlibabaNodeGroups(f *testing.F) {
	f.Add(nodeList)
	f.Add("sn,cpu_milli,memory_mib,gpu,model\nn0,96000,393216,0.5,G2\n")
	f.Add("sn,cpu_milli,memory_mib,gpu,model\nn0,-1,1,1,\n")
	f.Add("sn,cpu_milli,memory_mib,gpu,model\nn1,1e300,1,8,V100\n")
	f.Add("sn,cpu_milli,memory_mib,gpu,model\nn1,96000,1e15,1e9,V100\n")
	f.Fuzz(func(t *testing.T, csv string) {
		groups, err := AlibabaNodeGroups("nodes.csv", strings.NewReader(csv), DefaultPrices())
		if err != nil {
			return
		}
		for _, g := range groups {
			for name, q := range g.Capacity {
				if q.Sign() < 0 || q.MilliValue()%1000 != 0 && name != "cpu" || q.MilliValue() == math.MaxInt64 {
					t.Fatalf("group %s capacity %s %s from %q", g.Name, q.String(), name, csv)
				}
			}
			if g.MaxSize <= 0 || math.IsNaN(g.PricePerHour) || g.PricePerHour < 0 {
				t.Fatalf("group %+v from %q", g, csv)
			}
		}
	})
}

// FuzzAzureLoad: the Azure trace reader never panics, and its curve starts
// at 0, moves forward one bucket at a time and holds finite, non-negative
// rates.
func FuzzAzureLoad(f *testing.F) {
	f.Add(azure, int64(time.Minute), "requests")
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16T18:17:00Z,1,1\n2023-11-16T18:18:30.5Z,1,1\n", int64(30*time.Second), "tokens")
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,1,1\n1990-01-01 00:00:00,1,1\n", int64(time.Minute), "requests")
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n0,1,1\n1e9,1,1\n", int64(time.Minute), "requests")
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n0,1e300,1\n9999999999,1,1\n", int64(time.Minute), "tokens")
	f.Fuzz(func(t *testing.T, csv string, bucket int64, measure string) {
		if bucket > 0 && bucket < int64(time.Second) {
			bucket = int64(time.Second) // keep the curve small enough to fuzz
		}
		pts, err := AzureLoad("azure.csv", strings.NewReader(csv), AzureOptions{Bucket: time.Duration(bucket),
			Measure: AzureMeasure(measure), MaxSpan: 24 * time.Hour})
		if err != nil {
			return
		}
		for i, p := range pts {
			if p.Value < 0 || math.IsNaN(p.Value) || math.IsInf(p.Value, 0) || (i == 0 && p.At.Duration != 0) ||
				(i > 0 && p.At.Duration <= pts[i-1].At.Duration) {
				t.Fatalf("point %d %+v of %d from %q", i, p, len(pts), csv)
			}
		}
	})
}
