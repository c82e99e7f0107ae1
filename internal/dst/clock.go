package dst

import (
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// simClock is the virtual clock. Unlike k8s.io/utils/clock/testing's
// FakeClock, which wakes every waiter due in one step at once (and leaves
// the order in which the woken goroutines run to the Go scheduler), it
// moves time to one waiter's deadline at a time and lets the harness wait
// for the goroutines to settle in between: the loop's ticker and a drain's
// retry due at the same moment wake one after the other, in the order
// they were set.
type simClock struct {
	mu      sync.Mutex
	now     time.Time
	seq     int
	waiters []*simWaiter
}

type simWaiter struct {
	clk    *simClock
	at     time.Time
	seq    int
	period time.Duration
	ch     chan time.Time
}

var _ clock.WithTicker = (*simClock)(nil)

func newSimClock(t time.Time) *simClock { return &simClock{now: t} }

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *simClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *simClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

func (c *simClock) Tick(d time.Duration) <-chan time.Time { return c.NewTicker(d).C() }

func (c *simClock) Sleep(d time.Duration) { <-c.After(d) }

func (c *simClock) NewTimer(d time.Duration) clock.Timer { return c.add(d, 0) }

func (c *simClock) NewTicker(d time.Duration) clock.Ticker { return simTicker{c.add(d, d)} }

// simTicker is a periodic waiter; its Stop returns nothing.
type simTicker struct{ w *simWaiter }

func (t simTicker) C() <-chan time.Time { return t.w.ch }
func (t simTicker) Stop()               { t.w.Stop() }

func (c *simClock) add(d, period time.Duration) *simWaiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	w := &simWaiter{clk: c, at: c.now.Add(d), seq: c.seq, period: period, ch: make(chan time.Time, 1)}
	if d <= 0 && period == 0 {
		w.ch <- c.now
		return w
	}
	c.waiters = append(c.waiters, w)
	return w
}

func (w *simWaiter) C() <-chan time.Time { return w.ch }

// Stop implements clock.Timer and clock.Ticker.
func (w *simWaiter) Stop() bool {
	w.clk.mu.Lock()
	defer w.clk.mu.Unlock()
	return w.clk.remove(w)
}

// Reset implements clock.Timer.
func (w *simWaiter) Reset(d time.Duration) bool {
	c := w.clk
	c.mu.Lock()
	defer c.mu.Unlock()
	active := c.remove(w)
	c.seq++
	w.at, w.seq = c.now.Add(d), c.seq
	c.waiters = append(c.waiters, w)
	return active
}

func (c *simClock) remove(w *simWaiter) bool {
	for i, x := range c.waiters {
		if x == w {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			return true
		}
	}
	return false
}

// fireNext moves the clock to the earliest deadline not after until and
// fires that one waiter; false when none is due (the clock is then at
// until).
func (c *simClock) fireNext(until time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	sort.SliceStable(c.waiters, func(i, j int) bool {
		a, b := c.waiters[i], c.waiters[j]
		if !a.at.Equal(b.at) {
			return a.at.Before(b.at)
		}
		return a.seq < b.seq
	})
	if len(c.waiters) == 0 || c.waiters[0].at.After(until) {
		if until.After(c.now) {
			c.now = until
		}
		return false
	}
	w := c.waiters[0]
	if w.at.After(c.now) {
		c.now = w.at
	}
	select {
	case w.ch <- c.now:
	default: // a ticker nobody read: the tick is dropped, as time.Ticker does
	}
	if w.period > 0 {
		c.seq++
		w.at, w.seq = w.at.Add(w.period), c.seq
	} else {
		c.waiters = c.waiters[1:]
	}
	return true
}
