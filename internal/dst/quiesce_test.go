package dst

import (
	"sync/atomic"
	"testing"
	"time"
)

// A goroutine that keeps running is work under way, for the cheap look and
// for the whole one; once it blocks, the wait settles.
func TestQuiescenceSeesRunningWork(t *testing.T) {
	q := quiescence{Timeout: 5 * time.Second}
	var stop atomic.Bool
	done := make(chan struct{})
	release := make(chan struct{})
	go func() {
		for !stop.Load() {
			for i := 0; i < 1000; i++ {
				_ = i * i
			}
		}
		close(done)
		<-release // blocked: idle
	}()
	defer close(release)
	time.Sleep(time.Millisecond)
	for i := 0; i < 20; i++ {
		if q.idle(true) {
			t.Fatalf("look %d: idle while a goroutine is running", i)
		}
	}
	stop.Store(true)
	<-done
	if err := q.wait(); err != nil {
		t.Fatalf("wait after the goroutine blocked: %v", err)
	}
}

// A goroutine in a real sleep is work under way.
func TestQuiescenceSeesARealSleep(t *testing.T) {
	q := quiescence{Timeout: 50 * time.Millisecond}
	done := make(chan struct{})
	go func() { time.Sleep(time.Second); close(done) }()
	if err := q.wait(); err == nil {
		t.Fatal("settled while a goroutine sleeps in real time")
	}
	<-done
	q.Timeout = 5 * time.Second
	if err := q.wait(); err != nil {
		t.Fatalf("wait after the sleep ended: %v", err)
	}
}
