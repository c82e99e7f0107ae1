package trace

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// JobColumns maps a jobs CSV's columns: which column holds what, and in
// which unit. Submit and one of Duration or End are required; GPUs, CPU
// and Memory may be left out (no request).
type JobColumns struct {
	Submit, Duration, End, GPUs, CPU, Memory string
	// TimeUnit is the unit of Submit, Duration and End (default 1s).
	TimeUnit time.Duration
	// CPUUnit is "cores" (default) or "milli".
	CPUUnit string
	// MemoryUnit is "MiB" (default), "GiB", "KiB" or "bytes".
	MemoryUnit string
	// GPUsPerNode, when set, splits a job of G GPUs with G > GPUsPerNode
	// into a gang of ceil(G/GPUsPerNode) pods that start together, each
	// asking for an equal share (rounded up) of the job's GPUs, cpu and
	// memory: a multi-node job as a training operator runs it.
	GPUsPerNode int64
}

// ParseJobColumns reads "submit=col,duration=col,gpus=col,cpu=col,memory=col"
// plus optional "end=col", "time-unit=ms", "cpu-unit=milli",
// "memory-unit=GiB", "gpus-per-node=8". Unknown keys are an error naming
// them.
func ParseJobColumns(s string) (JobColumns, error) {
	c := JobColumns{TimeUnit: time.Second, CPUUnit: "cores", MemoryUnit: "MiB"}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || v == "" {
			return c, fmt.Errorf("job columns: %q is not key=column", part)
		}
		switch k {
		case "submit":
			c.Submit = v
		case "duration":
			c.Duration = v
		case "end":
			c.End = v
		case "gpus":
			c.GPUs = v
		case "cpu":
			c.CPU = v
		case "memory":
			c.Memory = v
		case "time-unit":
			d, err := time.ParseDuration("1" + v)
			if err != nil || d <= 0 {
				return c, fmt.Errorf("job columns: time-unit: want s, ms, us, m or h, got %q", v)
			}
			c.TimeUnit = d
		case "cpu-unit":
			c.CPUUnit = v
		case "memory-unit":
			c.MemoryUnit = v
		case "gpus-per-node":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n <= 0 {
				return c, fmt.Errorf("job columns: gpus-per-node: want a positive whole number, got %q", v)
			}
			c.GPUsPerNode = n
		default:
			return c, fmt.Errorf("job columns: unknown key %q (known: submit, duration, end, gpus, cpu, memory, time-unit, cpu-unit, memory-unit, gpus-per-node)", k)
		}
	}
	return c, c.validate()
}

func (c JobColumns) validate() error {
	switch {
	case c.Submit == "":
		return fmt.Errorf("job columns: submit: a column is needed")
	case (c.Duration == "") == (c.End == ""):
		return fmt.Errorf("job columns: give exactly one of duration and end")
	case c.CPUUnit != "cores" && c.CPUUnit != "milli":
		return fmt.Errorf("job columns: cpu-unit: want cores or milli, got %q", c.CPUUnit)
	case c.GPUsPerNode < 0:
		return fmt.Errorf("job columns: gpus-per-node: must not be negative, got %d", c.GPUsPerNode)
	case c.GPUsPerNode > 0 && c.GPUs == "":
		return fmt.Errorf("job columns: gpus-per-node: needs the gpus column")
	}
	if _, ok := memoryUnits[c.MemoryUnit]; !ok {
		return fmt.Errorf("job columns: memory-unit: want bytes, KiB, MiB or GiB, got %q", c.MemoryUnit)
	}
	return nil
}

var memoryUnits = map[string]float64{"bytes": 1.0 / (1 << 20), "KiB": 1.0 / 1024, "MiB": 1, "GiB": 1024}

// JobStats say what a jobs CSV held.
type JobStats struct {
	// Jobs is how many rows became Jobs.
	Jobs int
	// RunningAtEnd are rows with an empty end (or duration): still running
	// when the trace ends, they run to its end.
	RunningAtEnd int
	// Skipped are the rows left out, by reason.
	Skipped Skipped
	// Span is from the first to the last submission; LastLine is the line
	// of the last.
	Span     time.Duration
	LastLine int
	// Gangs are the jobs split into several pods (gpus-per-node).
	Gangs int
}

// jobRow is one row read.
type jobRow struct {
	line           int
	submit, end    float64 // seconds on the trace's axis
	open           bool    // empty end or duration: running at the end
	gpus, cpu, mem float64
}

// Jobs reads a jobs CSV with the mapping c. Submit and end times are
// numbers in c.TimeUnit or date-times (RFC 3339, "2017-10-09 07:01:55"),
// one form throughout; submissions are made relative to the first, in any
// row order. A row with an empty end (or duration) is still running when
// the trace ends and runs to its end, the latest time the trace holds.
// Rows with no submit time or no run time are skipped and counted by
// reason; every bad cell is an error naming file:line:column.
func Jobs(name string, r io.Reader, c JobColumns) ([]scenario.Workload, JobStats, error) {
	var st JobStats
	if c.TimeUnit == 0 {
		c.TimeUnit = time.Second
	}
	if c.CPUUnit == "" {
		c.CPUUnit = "cores"
	}
	if c.MemoryUnit == "" {
		c.MemoryUnit = "MiB"
	}
	if err := c.validate(); err != nil {
		return nil, st, err
	}
	t, err := readTable(name, r)
	if err != nil {
		return nil, st, err
	}
	rows, traceEnd, err := readJobRows(t, c, &st)
	if err != nil {
		return nil, st, err
	}
	type job struct {
		line           int
		submit, run    float64
		gpus, cpu, mem int64
	}
	jobs := make([]job, 0, len(rows))
	first, last := math.Inf(1), math.Inf(-1)
	for _, row := range rows {
		end := row.end
		if row.open {
			end = traceEnd
			st.RunningAtEnd++
		}
		if end-row.submit <= 0 {
			st.Skipped.add("with no run time (end at or before submit)", row.line)
			continue
		}
		cpu := row.cpu
		if c.CPUUnit == "cores" {
			cpu *= 1000
		}
		jobs = append(jobs, job{line: row.line, submit: row.submit, run: end - row.submit, gpus: int64(row.gpus), cpu: int64(math.Round(cpu)),
			mem: int64(math.Round(row.mem * memoryUnits[c.MemoryUnit]))})
		first = math.Min(first, row.submit)
		if row.submit > last {
			last, st.LastLine = row.submit, row.line
		}
	}
	st.Jobs = len(jobs)
	if len(jobs) > 0 {
		st.Span = seconds(last - first)
	}
	byKey := map[string]*scenario.Workload{}
	var keys []string
	for _, j := range jobs {
		pods := int64(1)
		if c.GPUsPerNode > 0 && j.gpus > c.GPUsPerNode {
			pods = ceilDiv(j.gpus, c.GPUsPerNode)
			if pods > maxGangPods {
				return nil, st, fmt.Errorf("%s:%d: column %s: a job of %d GPUs on nodes of %d would be %d pods; at most %d",
					name, j.line, c.GPUs, j.gpus, c.GPUsPerNode, pods, maxGangPods)
			}
			j.gpus, j.cpu, j.mem = ceilDiv(j.gpus, pods), ceilDiv(j.cpu, pods), ceilDiv(j.mem, pods)
			st.Gangs++
		}
		key := fmt.Sprintf("c%d-m%d-g%d", j.cpu, j.mem, j.gpus)
		if pods > 1 {
			key += fmt.Sprintf("-x%d", pods)
		}
		w := byKey[key]
		if w == nil {
			w = &scenario.Workload{Name: "job-" + key, Namespace: scenario.DefaultNamespace, Pod: podTemplate(j.cpu, j.mem, j.gpus, "")}
			byKey[key] = w
			keys = append(keys, key)
		}
		b := scenario.JobBatch{
			At:       metav1.Duration{Duration: seconds(j.submit - first)},
			Count:    int(pods),
			Duration: metav1.Duration{Duration: seconds(j.run)},
		}
		if pods > 1 {
			b.Gang = int(pods)
		}
		w.Jobs = append(w.Jobs, b)
	}
	sort.Strings(keys)
	out := make([]scenario.Workload, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out, st, nil
}

// maxGangPods bounds the pods one job of a jobs CSV becomes: the largest
// public training jobs span a few thousand GPUs.
const maxGangPods = 10000

// ceilDiv is a/b rounded up, for positive b.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// readJobRows reads every row's cells and the latest time the trace holds.
func readJobRows(t *table, c JobColumns, st *JobStats) ([]jobRow, float64, error) {
	fields := []string{c.Submit, c.Duration, c.End, c.GPUs, c.CPU, c.Memory}
	idx := make([]int, len(fields))
	for i, f := range fields {
		idx[i] = -1
		if f != "" {
			cols, err := t.need(f)
			if err != nil {
				return nil, 0, err
			}
			idx[i] = cols[0]
		}
	}
	count := func(row, i int, what string, whole bool, limit float64) (float64, error) {
		if idx[i] < 0 {
			return 0, nil
		}
		return t.count(row, idx[i], what, whole, limit)
	}
	cpuLimit := maxTraceMilliCPU / 1000
	if c.CPUUnit == "milli" {
		cpuLimit = maxTraceMilliCPU
	}
	times := newTimeColumns(t, c.TimeUnit)
	traceEnd := math.Inf(-1)
	rows := make([]jobRow, 0, len(t.rows))
	for r := range t.rows {
		row := jobRow{line: t.line(r)}
		submit, empty, err := times.seconds(r, idx[0])
		if err != nil {
			return nil, 0, err
		}
		if empty {
			st.Skipped.add("with no submit time", row.line)
			continue
		}
		row.submit = submit
		if c.End != "" {
			row.end, row.open, err = times.seconds(r, idx[2])
		} else if t.str(r, idx[1]) == "" {
			row.open = true
		} else {
			var d float64
			d, err = t.count(r, idx[1], "a duration", false, maxTraceSeconds/c.TimeUnit.Seconds())
			row.end = submit + d*c.TimeUnit.Seconds()
		}
		if err != nil {
			return nil, 0, err
		}
		if row.gpus, err = count(r, 3, "a GPU count", true, maxTraceGPUs); err != nil {
			return nil, 0, err
		}
		if row.cpu, err = count(r, 4, "a cpu request", c.CPUUnit == "milli", cpuLimit); err != nil {
			return nil, 0, err
		}
		if row.mem, err = count(r, 5, "a memory request", false, maxTraceMemoryMiB/memoryUnits[c.MemoryUnit]); err != nil {
			return nil, 0, err
		}
		traceEnd = math.Max(traceEnd, row.submit)
		if !row.open {
			traceEnd = math.Max(traceEnd, row.end)
		}
		rows = append(rows, row)
	}
	return rows, traceEnd, nil
}

// seconds turns seconds into a Duration, saturating rather than wrapping
// for spans a Duration cannot hold (about 292 years).
func seconds(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * 1e9)
}
