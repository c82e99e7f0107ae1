package dst

import (
	"bytes"
	"fmt"
	"runtime"
	"time"
)

// quiescence waits until no goroutine of the process can run without
// the virtual clock moving or the harness acting: every goroutine but the
// caller's is blocked on a channel, a select, a condition or a lock. A
// goroutine that is running, runnable, in a system call or in a real
// time.Sleep (client-go's conflict retries sleep a few milliseconds) is
// work still under way. Two idle looks in a row, with yields between,
// make one answer.
type quiescence struct {
	buf []byte
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

func (q *quiescence) idle() bool {
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
