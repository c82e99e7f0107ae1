package trace

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

const nodeList = `sn,cpu_milli,memory_mib,gpu,model
n0,96000,393216,8,G2
n1,32000,262144,0,
n2,96000,393216,8,G2
n3,8000,32768,1,V100M16
`

func TestAlibabaNodeGroups(t *testing.T) {
	groups, err := AlibabaNodeGroups("nodes.csv", strings.NewReader(nodeList), DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 3 {
		t.Fatalf("got %d groups, want 3 shapes", len(groups))
	}
	// Sorted by model: "" (cpu), G2, V100M16.
	cpu, g2, v100 := groups[0], groups[1], groups[2]
	if cpu.Name != "cpu-0g-32c-256gi" || cpu.MaxSize != 1 || len(cpu.Taints) != 0 {
		t.Errorf("cpu group %+v", cpu)
	}
	// 96 cores x 0.04 + 384 GiB x 0.005 + 8 x 1.20 = 3.84 + 1.92 + 9.6.
	if g2.MaxSize != 2 || g2.PricePerHour != 15.36 || g2.Labels[LabelGPUModel] != "G2" || g2.Capacity.Name("nvidia.com/gpu", "").Value() != 8 {
		t.Errorf("G2 group %+v", g2)
	}
	if v100.Name != "v100m16-1g-8c-32gi" || len(v100.Taints) != 1 {
		t.Errorf("V100 group %+v", v100)
	}
}

const podList = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,12000,16384,1,1000,,LS,Running,100,1100,100
p1,6000,12288,1,460,,LS,Running,400,2400,700
p2,12000,16384,1,1000,,LS,Running,1100,1200,1100
p3,4000,8192,0,0,,BE,Pending,1200,1300,
p4,4000,8192,0,0,,BE,Failed,1300,1300,1300
p5,8000,8192,2,1000,V100M16|V100M32|V100M32,LS,Running,2100,5100,2100
`

func TestAlibabaPods(t *testing.T) {
	ws, st, err := AlibabaPods("pods.csv", strings.NewReader(podList), AlibabaOptions{TimeScale: 2})
	if err != nil {
		t.Fatal(err)
	}
	if st.Pods != 5 || st.Skipped.Count() != 1 || st.FractionalGPU != 1 || st.Span != 1000*time.Second {
		t.Errorf("stats %+v, want 5 pods, 1 skipped (no run time), 1 fractional, span (2100-100)/2 = 1000s", st)
	}
	byName := map[string][]time.Duration{}
	for _, w := range ws {
		for _, b := range w.Jobs {
			byName[w.Name] = append(byName[w.Name], b.At.Duration, b.Duration.Duration)
		}
	}
	// p0 and p2 share a shape; p1 ran from its scheduling (700) for 1700s,
	// submitted at (400-100)/2; p3 was never scheduled: from creation.
	want := map[string][]time.Duration{
		"openb-c12000-m16384-g1": {0, 1000 * time.Second, 500 * time.Second, 100 * time.Second},
		"openb-c6000-m12288-g1":  {150 * time.Second, 1700 * time.Second},
		"openb-c4000-m8192-g0":   {550 * time.Second, 100 * time.Second},
	}
	for name, w := range want {
		if got := byName[name]; len(got) != len(w) || got[0] != w[0] || got[1] != w[1] || (len(w) > 2 && (got[2] != w[2] || got[3] != w[3])) {
			t.Errorf("%s: got %v, want %v", name, got, w)
		}
	}
	var spec *v1.NodeSelector
	for _, w := range ws {
		if strings.HasPrefix(w.Name, "openb-c8000-m8192-g2-s") {
			spec = w.Pod.NodeAffinity
		}
	}
	if spec == nil || strings.Join(spec.NodeSelectorTerms[0].MatchExpressions[0].Values, ",") != "V100M16,V100M32" {
		t.Errorf("gpu_spec affinity %+v, want In V100M16,V100M32", spec)
	}
}

func TestAlibabaBadInput(t *testing.T) {
	_, _, err := AlibabaPods("pods.csv", strings.NewReader("name,cpu_milli\np,1\n"), AlibabaOptions{})
	if err == nil || !strings.Contains(err.Error(), "pods.csv: no column memory_mib") {
		t.Errorf("missing columns: %v", err)
	}
	bad := strings.Replace(podList, "p1,6000", "p1,lots", 1)
	_, _, err = AlibabaPods("pods.csv", strings.NewReader(bad), AlibabaOptions{})
	if err == nil || !strings.Contains(err.Error(), `pods.csv:3:4: column cpu_milli: not a number: "lots"`) {
		t.Errorf("bad number: %v", err)
	}
}

const azure = `TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:17:03.9799600,4808,10
2023-11-16 18:17:30.0000000,100,20
2023-11-16 18:18:10.5000000,500,100
2023-11-16 18:20:00.0000000,10,10
`

func TestAzureLoad(t *testing.T) {
	pts, err := AzureLoad("azure.csv", strings.NewReader(azure), AzureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Minutes from the first request (18:17:03.98): 2 requests, 1 (18:18:10),
	// 1 (18:20:00 is 2m56s in), then 0.
	want := []float64{2.0 / 60, 1.0 / 60, 1.0 / 60, 0}
	if len(pts) != len(want) {
		t.Fatalf("got %d points, want %d", len(pts), len(want))
	}
	for i, p := range pts {
		if p.At.Duration != time.Duration(i)*time.Minute || p.Value != want[i] {
			t.Errorf("point %d: %v %v, want %v %v", i, p.At.Duration, p.Value, time.Duration(i)*time.Minute, want[i])
		}
	}
	tok, err := AzureLoad("azure.csv", strings.NewReader(azure), AzureOptions{Measure: AzureTokens, Bucket: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if tok[0].Value != (4818+120+600)/120.0 || tok[1].Value != 20/120.0 {
		t.Errorf("tokens per second %v", tok)
	}
	if _, err := AzureLoad("azure.csv", strings.NewReader("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1\n"), AzureOptions{}); err == nil ||
		!strings.Contains(err.Error(), "azure.csv:2:1: column TIMESTAMP") {
		t.Errorf("bad timestamp: %v", err)
	}
}

const jobs = `id,start_ms,end_ms,gpu,cores,mem_gb
a,1000,61000,1,4,16
b,31000,91000,1,4,16
c,5000,5000,0,1,1
d,2000,3602000,0,2.5,8
`

func TestJobs(t *testing.T) {
	cols, err := ParseJobColumns("submit=start_ms,end=end_ms,gpus=gpu,cpu=cores,memory=mem_gb,time-unit=ms,memory-unit=GiB")
	if err != nil {
		t.Fatal(err)
	}
	ws, st, err := Jobs("jobs.csv", strings.NewReader(jobs), cols)
	if err != nil {
		t.Fatal(err)
	}
	if st.Skipped.Count() != 1 || len(ws) != 2 {
		t.Fatalf("skipped %s, %d workloads; want 1 and 2 shapes", st.Skipped, len(ws))
	}
	gpuJobs, cpuJobs := ws[1], ws[0] // sorted by key: c2500... before c4000...
	if gpuJobs.Name != "job-c4000-m16384-g1" || len(gpuJobs.Jobs) != 2 || gpuJobs.Jobs[1].At.Duration != 30*time.Second ||
		gpuJobs.Jobs[1].Duration.Duration != time.Minute || len(gpuJobs.Pod.Tolerations) != 1 {
		t.Errorf("GPU jobs %+v", gpuJobs)
	}
	if cpuJobs.Name != "job-c2500-m8192-g0" || cpuJobs.Jobs[0].At.Duration != time.Second || cpuJobs.Jobs[0].Duration.Duration != time.Hour {
		t.Errorf("cpu jobs %+v", cpuJobs)
	}
	for _, bad := range []string{"duration=d", "submit=s,duration=d,end=e", "submit=s,duration=d,colour=red", "submit=s,duration=d,cpu-unit=m"} {
		if _, err := ParseJobColumns(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	cols, _ = ParseJobColumns("submit=start_ms,duration=runtime")
	if _, _, err := Jobs("jobs.csv", strings.NewReader(jobs), cols); err == nil || !strings.Contains(err.Error(), "no column runtime") {
		t.Errorf("missing column: %v", err)
	}
}
