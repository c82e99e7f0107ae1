package trace

import (
	"fmt"
	"io"
	"sort"
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
}

// ParseJobColumns reads "submit=col,duration=col,gpus=col,cpu=col,memory=col"
// plus optional "end=col", "time-unit=ms", "cpu-unit=milli",
// "memory-unit=GiB". Unknown keys are an error naming them.
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
		default:
			return c, fmt.Errorf("job columns: unknown key %q (known: submit, duration, end, gpus, cpu, memory, time-unit, cpu-unit, memory-unit)", k)
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
	}
	if _, ok := memoryUnits[c.MemoryUnit]; !ok {
		return fmt.Errorf("job columns: memory-unit: want bytes, KiB, MiB or GiB, got %q", c.MemoryUnit)
	}
	return nil
}

var memoryUnits = map[string]float64{"bytes": 1.0 / (1 << 20), "KiB": 1.0 / 1024, "MiB": 1, "GiB": 1024}

// Jobs reads a jobs CSV with the mapping c. Submit times are made relative
// to the first; rows with no run time are skipped and counted.
func Jobs(name string, r io.Reader, c JobColumns) ([]scenario.Workload, int, error) {
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
		return nil, 0, err
	}
	t, err := readTable(name, r)
	if err != nil {
		return nil, 0, err
	}
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
	value := func(row, i int) (float64, error) {
		if idx[i] < 0 {
			return 0, nil
		}
		return t.float(row, idx[i], fields[i])
	}
	type job struct {
		submit, run    float64
		gpus, cpu, mem int64
	}
	var jobs []job
	skipped := 0
	first := 0.0
	for row := range t.rows {
		var v [6]float64
		for i := range v {
			if v[i], err = value(row, i); err != nil {
				return nil, 0, err
			}
		}
		run := v[1]
		if c.End != "" {
			run = v[2] - v[0]
		}
		if run <= 0 {
			skipped++
			continue
		}
		cpu := v[4]
		if c.CPUUnit == "cores" {
			cpu *= 1000
		}
		j := job{submit: v[0], run: run, gpus: int64(v[3]), cpu: int64(cpu), mem: int64(v[5] * memoryUnits[c.MemoryUnit])}
		if len(jobs) == 0 || j.submit < first {
			first = j.submit
		}
		jobs = append(jobs, j)
	}
	byKey := map[string]*scenario.Workload{}
	var keys []string
	for _, j := range jobs {
		key := fmt.Sprintf("c%d-m%d-g%d", j.cpu, j.mem, j.gpus)
		w := byKey[key]
		if w == nil {
			w = &scenario.Workload{Name: "job-" + key, Namespace: scenario.DefaultNamespace, Pod: podTemplate(j.cpu, j.mem, j.gpus, "")}
			byKey[key] = w
			keys = append(keys, key)
		}
		w.Jobs = append(w.Jobs, scenario.JobBatch{
			At:       metav1.Duration{Duration: time.Duration((j.submit - first) * float64(c.TimeUnit))},
			Count:    1,
			Duration: metav1.Duration{Duration: time.Duration(j.run * float64(c.TimeUnit))},
		})
	}
	sort.Strings(keys)
	out := make([]scenario.Workload, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out, skipped, nil
}
