package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
	"github.com/gpuscale/gpuscale/pkg/sim/report"
	"github.com/gpuscale/gpuscale/pkg/sim/trace"
)

// defaultMaxVirtualTime bounds a run's virtual time: a year (the longest
// public trace, Alibaba's, spans about 150 days). The memory bound's
// default is defaultMaxMemory.
const defaultMaxVirtualTime = 366 * 24 * time.Hour

// simulateLimits bound a run: how much virtual time it may simulate and how
// much memory it may hold.
type simulateLimits struct {
	maxVirtualTime time.Duration
	maxMemory      string
}

func addLimitFlags(fs *pflag.FlagSet, l *simulateLimits) {
	fs.DurationVar(&l.maxVirtualTime, "max-virtual-time", defaultMaxVirtualTime,
		"Refuse a run that would simulate more virtual time than this (a trace's span, a scenario's duration); 0: no bound.")
	fs.StringVar(&l.maxMemory, "max-memory", defaultMaxMemory(),
		"Stop a run, with the report so far, once the process holds more memory than this (a quantity: 8Gi, 512Mi); 0: no bound. Default: three quarters of the machine's (or cgroup's) memory, at most 8Gi.")
}

// memoryBytes is --max-memory in bytes; validateSimulateFlags has checked it.
func (l simulateLimits) memoryBytes() uint64 {
	q, err := resource.ParseQuantity(l.maxMemory)
	if err != nil || q.Sign() <= 0 {
		return 0
	}
	return uint64(q.Value())
}

// validateSimulateFlags refuses values the loaders would otherwise take for
// their defaults or misread, naming the flag and the value.
func validateSimulateFlags(f *Options) error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: "+format, append([]any{flag}, args...)...))
	}
	for i, c := range f.compare {
		if strings.Trim(c, " ,") == "" {
			bad("compare", "%d is empty; give the settings of that run as --set takes them (expander=price), got %q", i+1, c)
		}
	}
	if f.azureBucket < time.Second {
		bad("azure-bucket", "must be at least 1s, got %s", f.azureBucket)
	}
	if !(f.timeScale > 0) || math.IsInf(f.timeScale, 0) {
		bad("time-scale", "must be positive and finite, got %s", strconv.FormatFloat(f.timeScale, 'g', -1, 64))
	}
	for _, d := range []struct {
		flag string
		d    time.Duration
	}{{"duration", f.duration}, {"max-virtual-time", f.limits.maxVirtualTime}} {
		if d.d < 0 {
			bad(d.flag, "must not be negative, got %s", d.d)
		}
	}
	if q, err := resource.ParseQuantity(f.limits.maxMemory); err != nil || q.Sign() < 0 {
		bad("max-memory", "want a quantity of bytes such as 8Gi or 512Mi (0: no bound), got %q", f.limits.maxMemory)
	}
	return errors.Join(errs...)
}

// simulationContext ends on SIGINT or SIGTERM, so that a run stops and
// reports what it measured so far.
func simulationContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// untilDone runs f and waits for it or for ctx, whichever ends first. Code
// that cannot be interrupted (the lower bound's solver) is left running
// when ctx ends; the command returns and the process exits with it.
func untilDone[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
}

// applyMemoryLimit makes the garbage collector keep the heap under the
// bound (the engine stops the run if live data goes past it anyway).
func applyMemoryLimit(l simulateLimits) {
	if b := l.memoryBytes(); b > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(int64(b))
	}
}

// limitOptions passes the bounds to the engine.
func limitOptions(o *engine.Options, l simulateLimits) {
	o.MaxVirtualTime = l.maxVirtualTime
	o.MaxMemory = l.memoryBytes()
}

// limitError names the flag behind an engine bound.
func limitError(err error, l simulateLimits) error {
	var le *engine.LimitError
	if !errors.As(err, &le) {
		return err
	}
	switch le.Option {
	case "MaxVirtualTime":
		return fmt.Errorf("--max-virtual-time %s: %s (needs %s); raise the bound or shorten the run (--duration)", l.maxVirtualTime, le.Why, le.Need)
	case "MaxMemory":
		return fmt.Errorf("--max-memory %s: %s (%s); the report covers the run so far", l.maxMemory, le.Why, le.Need)
	}
	return err
}

// reportStopped says, after the summary, which runs ended early.
func reportStopped(w io.Writer, runs []report.Run) {
	for i, r := range runs {
		if r.Result.Stopped != "" {
			fmt.Fprintf(w, "run %d (%s) stopped at virtual time %s: %s; its figures cover 0 to %s only\n",
				i+1, r.Name(), r.Result.Duration, r.Result.Stopped, r.Result.Duration)
		}
	}
}

// traceNotes collects what the trace loaders left out or changed, printed
// on stderr before the runs.
type traceNotes []string

func (n *traceNotes) add(flag, file string, format string, args ...any) {
	*n = append(*n, fmt.Sprintf("%s %s: %s", flag, file, fmt.Sprintf(format, args...)))
}

func (n traceNotes) write(w io.Writer) {
	for _, s := range n {
		fmt.Fprintln(w, "warning:", s)
	}
}

// alibaba notes what the pod list reader left out or changed, and refuses
// a list whose submissions span more than --max-virtual-time.
func (n *traceNotes) alibaba(file string, st trace.AlibabaStats, l simulateLimits) error {
	if err := spanError(file, st.Span, st.LastLine, l); err != nil {
		return err
	}
	if st.Skipped.Count() > 0 {
		n.add("--alibaba-pods", file, "%s", st.Skipped)
	}
	if st.RunningAtEnd > 0 {
		n.add("--alibaba-pods", file, "%d pod(s) with no deletion_time run to the end of the trace", st.RunningAtEnd)
	}
	if st.FractionalGPU > 0 {
		n.add("--alibaba-pods", file, "%d pod(s) asking for part of a GPU (gpu_milli < 1000) get a whole one: nvidia.com/gpu is counted in units", st.FractionalGPU)
	}
	return nil
}

// jobs does the same for a jobs CSV.
func (n *traceNotes) jobs(file string, st trace.JobStats, l simulateLimits) error {
	if err := spanError(file, st.Span, st.LastLine, l); err != nil {
		return err
	}
	if st.Skipped.Count() > 0 {
		n.add("--jobs", file, "%s", st.Skipped)
	}
	if st.RunningAtEnd > 0 {
		n.add("--jobs", file, "%d job(s) with no end run to the end of the trace", st.RunningAtEnd)
	}
	return nil
}

func spanError(file string, span time.Duration, lastLine int, l simulateLimits) error {
	if l.maxVirtualTime > 0 && span > l.maxVirtualTime {
		return fmt.Errorf("%s: submissions span %s (the last on line %d), more than --max-virtual-time %s", file, span, lastLine, l.maxVirtualTime)
	}
	return nil
}

func azureError(err error, l simulateLimits) error {
	if errors.Is(err, trace.ErrTooLong) {
		return fmt.Errorf("--azure: %w; the span allowed is --max-virtual-time %s", err, l.maxVirtualTime)
	}
	return fmt.Errorf("--azure: %w", err)
}
