package autoscalerflags

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpuscale/gpuscale/pkg/limits"
)

// checked is a flag value whose parse error is kept for Validate, so that
// one run reports every bad value instead of the first.
type checked interface{ check() error }

// rangeValue is a <min>:<max> flag.
type rangeValue struct {
	dst  *limits.Range
	name string
	err  error
}

func (v *rangeValue) String() string { return fmt.Sprintf("%d:%d", v.dst.Min, v.dst.Max) }
func (v *rangeValue) Type() string   { return "min:max" }
func (v *rangeValue) check() error   { return v.err }

func (v *rangeValue) Set(s string) error {
	r, err := limits.ParseRange(v.name, s)
	v.err = err
	if err == nil {
		*v.dst = r
	}
	return nil
}

func (f *Flags) rangeVar(dst *limits.Range, name, usage string) {
	v := &rangeValue{dst: dst, name: name}
	f.checks = append(f.checks, v)
	f.fs.Var(v, name, usage)
}

// gpuTotalValue is the repeatable <type>:<min>:<max> flag.
type gpuTotalValue struct {
	dst  *map[string]limits.Range
	set  bool
	errs []error
}

func (v *gpuTotalValue) Type() string { return "type:min:max" }
func (v *gpuTotalValue) check() error {
	if len(v.errs) == 0 {
		return nil
	}
	return joinErrors(v.errs)
}

func (v *gpuTotalValue) String() string {
	var parts []string
	l := limits.Limits{GPUs: *v.dst}
	for _, t := range l.GPUTypes() {
		r := (*v.dst)[t]
		parts = append(parts, fmt.Sprintf("%s:%d:%d", t, r.Min, r.Max))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (v *gpuTotalValue) Set(s string) error {
	if !v.set || *v.dst == nil {
		*v.dst, v.set = map[string]limits.Range{}, true
	}
	typ, r, err := limits.ParseGPUTotal(s)
	switch {
	case err != nil:
		v.errs = append(v.errs, err)
	case hasKey(*v.dst, typ):
		v.errs = append(v.errs, fmt.Errorf("--gpu-total: GPU type %q given twice, got %q", typ, s))
	default:
		(*v.dst)[typ] = r
	}
	return nil
}

func hasKey(m map[string]limits.Range, k string) bool {
	_, ok := m[k]
	return ok
}

// appendValue is a repeatable string flag; several flags may append to
// one list (--startup-taint and its older name --ignore-taint).
type appendValue struct{ dst *[]string }

func (v appendValue) String() string { return "[" + strings.Join(*v.dst, ",") + "]" }
func (v appendValue) Type() string   { return "stringArray" }
func (v appendValue) Set(s string) error {
	*v.dst = append(*v.dst, s)
	return nil
}

func (f *Flags) appendVar(dst *[]string, name, usage string) {
	f.fs.Var(appendValue{dst}, name, usage)
}

func (f *Flags) gpuTotalVar(dst *map[string]limits.Range, name, usage string) {
	v := &gpuTotalValue{dst: dst}
	f.checks = append(f.checks, v)
	f.fs.Var(v, name, usage)
}

// int32Value is an int flag that must fit an int32 (a pod priority).
type int32Value struct {
	dst  *int32
	name string
	err  error
}

func (v *int32Value) String() string { return strconv.FormatInt(int64(*v.dst), 10) }
func (v *int32Value) Type() string   { return "int32" }
func (v *int32Value) check() error   { return v.err }

func (v *int32Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		v.err = fmt.Errorf("--%s: want a whole number, got %q", v.name, s)
	case n < math.MinInt32 || n > math.MaxInt32:
		v.err = fmt.Errorf("--%s: must fit a pod priority (int32), got %d", v.name, n)
	default:
		*v.dst, v.err = int32(n), nil
	}
	return nil
}

func (f *Flags) int32Var(dst *int32, name, usage string) {
	v := &int32Value{dst: dst, name: name}
	f.checks = append(f.checks, v)
	f.fs.Var(v, name, usage)
}
