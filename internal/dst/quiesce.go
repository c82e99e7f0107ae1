package dst

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"time"
)

// quiescence waits until no goroutine of the process can run without
// the virtual clock moving or the harness acting: every goroutine but the
// caller's is blocked on a channel, a select, a condition or a lock. A
// goroutine that is running, runnable, in a system call or in a real
// time.Sleep (client-go's conflict retries sleep a few milliseconds) is
// work still under way. Two idle looks in a row, with a yield between,
// make one answer; the second is a whole look.
//
// A look reads the scheduler's counts (runtime/metrics): nothing
// runnable, nothing running beside the caller, nothing in a system call.
// Those counts cannot tell a goroutine blocked on a channel from one in
// a real sleep, so a whole look that passes them takes the goroutine profile
// (every goroutine's stack as program counters, with the world stopped)
// and finds whether any stack is inside time.Sleep. The profile is not
// symbolized: each program counter is looked up once and remembered. A
// sleep lasts over a yield, so one whole look per answer finds it.
type quiescence struct {
	samples []metrics.Sample
	stacks  []runtime.StackRecord
	// sleeps remembers, per program counter, whether it lies in time.Sleep.
	sleeps map[uintptr]bool
	// Timeout bounds the wait in real time; past it the run is reported
	// as stuck rather than waited for.
	Timeout time.Duration
}

func (q *quiescence) wait() error {
	deadline := time.Now().Add(q.Timeout)
	idle, busy := 0, 0
	for idle < 2 {
		if q.idle(idle == 1) {
			idle, busy = idle+1, 0
		} else {
			idle, busy = 0, busy+1
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the controller's goroutines did not settle within %s", q.Timeout)
		}
		runtime.Gosched()
		if busy > busyYields {
			time.Sleep(50 * time.Microsecond)
		}
	}
	return nil
}

// maybeIdle is the cheap look: false when the scheduler's counts show
// work under way.
func (q *quiescence) maybeIdle() bool {
	if q.samples == nil {
		q.samples = []metrics.Sample{
			{Name: "/sched/goroutines/runnable:goroutines"},
			{Name: "/sched/goroutines/running:goroutines"},
			{Name: "/sched/goroutines/not-in-go:goroutines"},
		}
	}
	metrics.Read(q.samples)
	var n [3]uint64
	for i, s := range q.samples {
		if s.Value.Kind() != metrics.KindUint64 {
			return true // not reported by this runtime: the dump decides
		}
		n[i] = s.Value.Uint64()
	}
	return n[0] == 0 && n[1] <= 1 && n[2] == 0
}

func (q *quiescence) idle(whole bool) bool {
	if !q.maybeIdle() {
		return false
	}
	if !whole {
		return true
	}
	n, ok := runtime.GoroutineProfile(q.stacks)
	for !ok {
		q.stacks = make([]runtime.StackRecord, n+n/4+16)
		n, ok = runtime.GoroutineProfile(q.stacks)
	}
	for i := range q.stacks[:n] {
		for _, pc := range q.stacks[i].Stack() {
			if q.inSleep(pc) {
				return false
			}
		}
	}
	return true
}

// inSleep says whether pc lies in time.Sleep (the runtime's timeSleep,
// which carries that name).
func (q *quiescence) inSleep(pc uintptr) bool {
	sleeping, seen := q.sleeps[pc]
	if !seen {
		if q.sleeps == nil {
			q.sleeps = map[uintptr]bool{}
		}
		f := runtime.FuncForPC(pc - 1)
		sleeping = f != nil && f.Name() == "time.Sleep"
		q.sleeps[pc] = sleeping
	}
	return sleeping
}

// busyYields is how many busy looks in a row only yield before the wait
// also sleeps. Yielding lets the goroutines with work run at once; a
// sleep shorter than a millisecond lasts about one (the runtime's timers
// are that coarse when the process is otherwise idle), so it is kept for
// work that yielding does not finish: a real sleep, or work on another
// processor.
const busyYields = 64
