package engine

import (
	"context"
	"fmt"
	"runtime/metrics"
	"time"
)

// memoryCheckEvery is how many turns of the event loop pass between two
// reads of the process's memory (a read costs about a microsecond; a turn
// at least as much). The context is checked every turn.
const memoryCheckEvery = 64

// LimitError is a run refused or stopped by one of its bounds. Option
// names the Options field, so that a shell can name its own flag.
type LimitError struct {
	// Option is "MaxVirtualTime" or "MaxMemory".
	Option string
	// Limit is the bound as set, Need what the run reached or needs.
	Limit, Need string
	// Why says what needed it.
	Why string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s %s: %s (%s)", e.Option, e.Limit, e.Why, e.Need)
}

// RunContext is Run that stops when ctx is done, or when the process holds
// more memory than opts.MaxMemory: it then returns the result up to the
// virtual time reached (Result.Stopped says why) together with an error.
// A scenario that would run past opts.MaxVirtualTime is refused before it
// starts, with a *LimitError.
func RunContext(ctx context.Context, opts Options) (*Result, error) {
	e, err := newEngine(ctx, opts)
	if err != nil {
		return nil, err
	}
	if max := opts.MaxVirtualTime; max > 0 && e.end > max {
		why := fmt.Sprintf("scenario %s runs for %s", e.sc.Name, e.end)
		if e.pace.untilJobsDone {
			why = fmt.Sprintf("scenario %s has no duration and its last Job would end at %s, plus up to %s while Jobs wait",
				e.sc.Name, e.work.lastJobEnd(), MaxOverrun)
		}
		return nil, &LimitError{Option: "MaxVirtualTime", Limit: max.String(), Need: "virtual time " + e.end.String(), Why: why}
	}
	if err := e.run(); err != nil {
		return nil, fmt.Errorf("scenario %s at %s: %w", e.sc.Name, e.now, err)
	}
	res := e.result()
	if e.stop.stopped != nil {
		res.Stopped = e.stop.stopped.Error()
		return res, fmt.Errorf("scenario %s stopped at virtual time %s of %s: %w", e.sc.Name, e.now, e.stop.planned, e.stop.stopped)
	}
	return res, nil
}

// runStop serves RunContext: a run stops at the virtual time reached when
// done closes or memory runs over.
type runStop struct {
	done      <-chan struct{}
	maxMemory uint64 // Options.MaxMemory
	turns     uint64
	stopped   error
	planned   time.Duration
}

// shouldStop is called at the top of every turn of the event loop. When it
// says stop, the run ends at the current virtual time.
func (s *runStop) shouldStop(now time.Duration) bool {
	s.turns++
	select {
	case <-s.done:
		s.stopped = fmt.Errorf("interrupted: %w", context.Canceled)
		return true
	default:
	}
	if s.turns%memoryCheckEvery == 0 {
		if err := s.overMemory(fmt.Sprintf("the run holds more memory than allowed at virtual time %s", now)); err != nil {
			s.stopped = err
			return true
		}
	}
	return false
}

// startInterrupted is an error once the run's context is done: start-up
// (thousands of nodes and pods) stops there too, not only the event loop.
func (s *runStop) startInterrupted(what string) error {
	select {
	case <-s.done:
		return fmt.Errorf("interrupted while starting %s: %w", what, context.Canceled)
	default:
		return nil
	}
}

// overMemory is a *LimitError when the process holds more than
// Options.MaxMemory; why says what was going on.
func (s *runStop) overMemory(why string) error {
	if s.maxMemory == 0 {
		return nil
	}
	if held := heldMemory(); held > s.maxMemory {
		return &LimitError{Option: "MaxMemory", Limit: bytesString(s.maxMemory), Need: bytesString(held) + " held", Why: why}
	}
	return nil
}

// stopHere ends the run at the virtual time reached.
func (e *Engine) stopHere() {
	e.stop.planned = e.end
	e.end = e.now
}

// heldMemory is what the Go runtime holds from the operating system and
// has not given back.
func heldMemory() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

func bytesString(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", b)
}
