package trace

import (
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// LabelGPUModel carries a node's GPU model; the Alibaba trace's gpu_spec
// constraint selects on it.
const LabelGPUModel = "gpuscale.dev/gpu-model"

// gpuTaint is put on GPU node groups; GPU pods tolerate it.
func gpuTaint() v1.Taint {
	return v1.Taint{Key: gpu.ResourceName.String(), Value: "present", Effect: v1.TaintEffectNoSchedule}
}

var gpuToleration = v1.Toleration{Key: gpu.ResourceName.String(), Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}

// Prices turn a node shape into an hourly price: per core, per GiB of
// memory and per GPU of each model. The trace carries no prices; these
// defaults (DefaultPrices) are assumptions in line with public on-demand
// list prices, and a user may set their own.
type Prices struct {
	PerCore float64
	PerGiB  float64
	PerGPU  map[string]float64
	// DefaultPerGPU prices models missing from PerGPU.
	DefaultPerGPU float64
}

// DefaultPrices: $0.04 per core-hour, $0.005 per GiB-hour, and per
// GPU-hour T4 $0.35, P100 $1.46, V100 (16 and 32 GB) $2.48, the trace's
// anonymised G2 $1.20 and G3 $2.00, others $1.50.
func DefaultPrices() Prices {
	return Prices{PerCore: 0.04, PerGiB: 0.005, DefaultPerGPU: 1.5, PerGPU: map[string]float64{
		"T4": 0.35, "P100": 1.46, "V100M16": 2.48, "V100M32": 2.48, "G2": 1.2, "G3": 2.0,
	}}
}

// Price is the hourly price of a node.
func (p Prices) Price(cores, memGiB float64, gpus int64, model string) float64 {
	per, ok := p.PerGPU[model]
	if !ok {
		per = p.DefaultPerGPU
	}
	return math.Round((cores*p.PerCore+memGiB*p.PerGiB+float64(gpus)*per)*1e4) / 1e4
}

// AlibabaNodeGroups reads openb_node_list_*.csv (sn,cpu_milli,memory_mib,
// gpu,model) and returns one node group per distinct shape, its maximum the
// number of such nodes in the trace, its minimum and initial size 0.
func AlibabaNodeGroups(name string, r io.Reader, prices Prices) ([]scenario.NodeGroup, error) {
	t, err := readTable(name, r)
	if err != nil {
		return nil, err
	}
	cols, err := t.need("cpu_milli", "memory_mib", "gpu", "model")
	if err != nil {
		return nil, err
	}
	type shape struct {
		cpu, mem, gpus int64
		model          string
	}
	count := map[shape]int{}
	for i := range t.rows {
		var v [3]float64
		for j, c := range []struct {
			what  string
			limit float64
		}{{"a cpu capacity", maxTraceMilliCPU}, {"a memory capacity", maxTraceMemoryMiB}, {"a GPU count", maxTraceGPUs}} {
			if v[j], err = t.count(i, cols[j], c.what, true, c.limit); err != nil {
				return nil, err
			}
		}
		count[shape{int64(v[0]), int64(v[1]), int64(v[2]), t.str(i, cols[3])}]++
	}
	shapes := make([]shape, 0, len(count))
	for s := range count {
		shapes = append(shapes, s)
	}
	sort.Slice(shapes, func(i, j int) bool {
		a, b := shapes[i], shapes[j]
		if a.model != b.model {
			return a.model < b.model
		}
		if a.gpus != b.gpus {
			return a.gpus < b.gpus
		}
		if a.cpu != b.cpu {
			return a.cpu < b.cpu
		}
		return a.mem < b.mem
	})
	var out []scenario.NodeGroup
	for _, s := range shapes {
		model := strings.ToLower(s.model)
		if model == "" {
			model = "cpu"
		}
		g := scenario.NodeGroup{
			Name:    fmt.Sprintf("%s-%dg-%dc-%dgi", model, s.gpus, s.cpu/1000, s.mem/1024),
			MaxSize: count[s], InstanceType: fmt.Sprintf("%s.%dgpu.%dc", model, s.gpus, s.cpu/1000),
			PricePerHour: prices.Price(float64(s.cpu)/1000, float64(s.mem)/1024, s.gpus, s.model),
			Capacity: v1.ResourceList{
				v1.ResourceCPU:    *resource.NewMilliQuantity(s.cpu, resource.DecimalSI),
				v1.ResourceMemory: *resource.NewQuantity(s.mem<<20, resource.BinarySI),
			},
		}
		zero := 0
		g.InitialSize = &zero
		if s.gpus > 0 {
			g.Capacity[gpu.ResourceName] = *resource.NewQuantity(s.gpus, resource.DecimalSI)
			g.Labels = map[string]string{LabelGPUModel: s.model}
			g.Taints = []v1.Taint{gpuTaint()}
		}
		out = append(out, g)
	}
	return out, nil
}

// AlibabaOptions shape how the pod list is replayed.
type AlibabaOptions struct {
	// TimeScale divides submission times (durations are kept), so demand
	// that was spread over weeks arrives TimeScale times denser. 0 means
	// 1 (the timestamps as they are); a negative, NaN or infinite scale is
	// an error.
	TimeScale float64
}

// AlibabaStats says what was read and what was left out.
type AlibabaStats struct {
	Pods int
	// Skipped are pods left out, by reason: no creation time, or no run
	// time (deleted when created or scheduled).
	Skipped Skipped
	// RunningAtEnd are pods with an empty deletion_time: still running when
	// the trace ends, they run to its end.
	RunningAtEnd int
	// FractionalGPU are pods asking for part of a GPU (gpu_milli < 1000),
	// given a whole one: kube-scheduler counts nvidia.com/gpu in units.
	FractionalGPU int
	// Span is from the first to the last submission, after TimeScale;
	// LastLine is the line of the last.
	Span     time.Duration
	LastLine int
}

// alibabaPod is one row read.
type alibabaPod struct {
	line          int
	cpu, mem      float64
	gpus, gpuMill float64
	spec          string
	created       float64
	start, end    float64
	open          bool
}

// AlibabaPods reads openb_pod_list_*.csv and returns its pods as Jobs:
// submitted at creation_time (relative to the first, rows in any order),
// running for deletion_time minus scheduled_time (minus creation_time when
// never scheduled). Times are seconds or date-times, one form throughout.
// A pod with an empty deletion_time is still running when the trace ends
// and runs to its end, the latest time the trace holds. Pods of the same
// shape form one workload. gpu_spec becomes required node affinity on
// LabelGPUModel.
func AlibabaPods(name string, r io.Reader, o AlibabaOptions) ([]scenario.Workload, AlibabaStats, error) {
	var st AlibabaStats
	scale := o.TimeScale
	if scale == 0 {
		scale = 1
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return nil, st, fmt.Errorf("alibaba trace: time scale must be positive and finite, got %v", o.TimeScale)
	}
	t, err := readTable(name, r)
	if err != nil {
		return nil, st, err
	}
	rows, traceEnd, err := readAlibabaPods(t, &st)
	if err != nil {
		return nil, st, err
	}
	type pod struct {
		line        int
		key         string
		cpu, mem    int64
		gpus        int64
		spec        string
		submit, run float64
	}
	var pods []pod
	first, last := math.Inf(1), math.Inf(-1)
	for _, row := range rows {
		end := row.end
		if row.open {
			end = traceEnd
			st.RunningAtEnd++
		}
		run := end - row.start
		if run <= 0 {
			st.Skipped.add("with no run time (deleted when created or scheduled)", row.line)
			continue
		}
		if row.gpus > 0 && row.gpuMill > 0 && row.gpuMill < 1000 {
			st.FractionalGPU++
		}
		p := pod{line: row.line, cpu: int64(row.cpu), mem: int64(row.mem), gpus: int64(row.gpus), spec: row.spec, submit: row.created, run: run}
		p.key = fmt.Sprintf("c%d-m%d-g%d", p.cpu, p.mem, p.gpus)
		if p.spec != "" {
			h := fnv.New32a()
			_, _ = h.Write([]byte(p.spec))
			p.key += fmt.Sprintf("-s%08x", h.Sum32())
		}
		first = math.Min(first, row.created)
		if row.created > last {
			last, st.LastLine = row.created, row.line
		}
		pods = append(pods, p)
	}
	byKey := map[string]*scenario.Workload{}
	var keys []string
	for _, p := range pods {
		if (p.submit-first)/scale > maxTraceSeconds {
			return nil, st, fmt.Errorf("%s:%d: column creation_time: %v s after the first pod, divided by the time scale %v, is past 100 years",
				name, p.line, p.submit-first, scale)
		}
		at := seconds((p.submit - first) / scale)
		st.Span = max(st.Span, at)
		w := byKey[p.key]
		if w == nil {
			w = &scenario.Workload{Name: "openb-" + p.key, Namespace: scenario.DefaultNamespace, Pod: podTemplate(p.cpu, p.mem, p.gpus, p.spec)}
			byKey[p.key] = w
			keys = append(keys, p.key)
		}
		w.Jobs = append(w.Jobs, scenario.JobBatch{At: metav1.Duration{Duration: at}, Count: 1, Duration: metav1.Duration{Duration: seconds(p.run)}})
		st.Pods++
	}
	sort.Strings(keys)
	out := make([]scenario.Workload, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out, st, nil
}

// readAlibabaPods reads every row and the latest time the trace holds.
func readAlibabaPods(t *table, st *AlibabaStats) ([]alibabaPod, float64, error) {
	names := []string{"cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "creation_time", "deletion_time", "scheduled_time"}
	cols, err := t.need(names...)
	if err != nil {
		return nil, 0, err
	}
	times := newTimeColumns(t, time.Second)
	traceEnd := math.Inf(-1)
	rows := make([]alibabaPod, 0, len(t.rows))
	for i := range t.rows {
		p := alibabaPod{line: t.line(i), spec: t.str(i, cols[4])}
		for j, c := range []struct {
			v     *float64
			what  string
			limit float64
		}{{&p.cpu, "a cpu request", maxTraceMilliCPU}, {&p.mem, "a memory request", maxTraceMemoryMiB},
			{&p.gpus, "a GPU count", maxTraceGPUs}, {&p.gpuMill, "a GPU share", 1000 * maxTraceGPUs}} {
			if *c.v, err = t.count(i, cols[j], c.what, true, c.limit); err != nil {
				return nil, 0, err
			}
		}
		var emptyCreated, emptyScheduled bool
		if p.created, emptyCreated, err = times.seconds(i, cols[5]); err != nil {
			return nil, 0, err
		}
		if p.end, p.open, err = times.seconds(i, cols[6]); err != nil {
			return nil, 0, err
		}
		if p.start, emptyScheduled, err = times.seconds(i, cols[7]); err != nil {
			return nil, 0, err
		}
		if emptyCreated {
			st.Skipped.add("with no creation time", p.line)
			continue
		}
		if emptyScheduled {
			p.start = p.created
		}
		for _, v := range []float64{p.created, p.start} {
			traceEnd = math.Max(traceEnd, v)
		}
		if !p.open {
			traceEnd = math.Max(traceEnd, p.end)
		}
		rows = append(rows, p)
	}
	return rows, traceEnd, nil
}

func podTemplate(cpuMilli, memMiB, gpus int64, spec string) scenario.PodTemplate {
	t := scenario.PodTemplate{Requests: v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(memMiB<<20, resource.BinarySI),
	}}
	if gpus > 0 {
		t.Requests[gpu.ResourceName] = *resource.NewQuantity(gpus, resource.DecimalSI)
		t.Tolerations = []v1.Toleration{gpuToleration}
	}
	if spec != "" {
		t.NodeAffinity = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
			Key: LabelGPUModel, Operator: v1.NodeSelectorOpIn, Values: slices.Compact(sortStrings(strings.Split(spec, "|"))),
		}}}}}
	}
	return t
}

func sortStrings(s []string) []string { sort.Strings(s); return s }
