package dst

import (
	"bytes"
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
// work still under way. Two idle looks in a row, with yields between,
// make one answer.
//
// The goroutine dump is the exact test but costs a traceback of every
// goroutine; the scheduler's own counts (runtime/metrics) are cheap but
// approximate. A look reads the counts first and takes the dump only
// when they say nothing is runnable, running beside the caller or in a
// system call, so a busy process is never dumped and an idle one is
// still confirmed by the dump.
type quiescence struct {
	buf     []byte
	samples []metrics.Sample
	// Timeout bounds the wait in real time; past it the run is reported
	// as stuck rather than waited for.
	Timeout time.Duration
}

// busyStates are goroutine states that mean work is under way.
var busyStates = [][]byte{[]byte("[running"), []byte("[runnable"), []byte("[syscall"), []byte("[sleep"),
	[]byte("[preempted")}

func (q *quiescence) wait() error {
	deadline := time.Now().Add(q.Timeout)
	idle := 0
	for idle < 2 {
		if q.idle() {
			idle++
		} else {
			idle = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the controller's goroutines did not settle within %s", q.Timeout)
		}
		runtime.Gosched()
		if idle == 0 {
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

func (q *quiescence) idle() bool {
	if !q.maybeIdle() {
		return false
	}
	if q.buf == nil {
		q.buf = make([]byte, 1<<20)
	}
	var n int
	for {
		n = runtime.Stack(q.buf, true)
		if n < len(q.buf) {
			break
		}
		q.buf = make([]byte, 2*len(q.buf))
	}
	dump := q.buf[:n]
	// The first goroutine is the caller's own (running).
	first := true
	for len(dump) > 0 {
		line := dump
		if i := bytes.IndexByte(dump, '\n'); i >= 0 {
			line, dump = dump[:i], dump[i+1:]
		} else {
			dump = nil
		}
		if !bytes.HasPrefix(line, []byte("goroutine ")) {
			continue
		}
		if first {
			first = false
			continue
		}
		for _, s := range busyStates {
			if bytes.Contains(line, s) {
				return false
			}
		}
	}
	return true
}
