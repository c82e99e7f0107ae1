// Package benchmeasure holds what the ultra-scale benchmarks measure
// beyond the testing package's time per loop: the size they run at, the
// p99 of their loops, the CPU time of the process and the heap after a
// collection.
package benchmeasure

import (
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// NodesEnv names the variable that sets the node count of the ultra-scale
// benchmarks; GoalsEnv=1 makes a case that misses its goal fail.
const (
	NodesEnv = "GPUSCALE_BENCH_NODES"
	GoalsEnv = "GPUSCALE_BENCH_GOALS"
)

// Nodes is the node count from NodesEnv. Without it the benchmark is
// skipped, so that `make bench` stays short; a value that is not a count
// of at least 100 fails it.
func Nodes(b *testing.B) int {
	v := os.Getenv(NodesEnv)
	if v == "" {
		b.Skip(NodesEnv + " is not set (make bench-ultra sets it)")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 100 {
		b.Fatalf("%s: want a node count of at least 100, got %q", NodesEnv, v)
	}
	return n
}

// Goals reports whether goals are enforced: GoalsEnv=1 and at least
// 100,000 nodes, the size the goals are set for.
func Goals(nodes int) bool { return nodes >= 100000 && os.Getenv(GoalsEnv) == "1" }

// Percentile is the q-quantile of ds by nearest rank; 0 for none.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[max(0, int(math.Ceil(q*float64(len(s))))-1)]
}

// CPUTime is the user and system time the process has used.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// HeapMiB is the heap in use after a collection, in MiB: the spans that
// hold at least one live object, so it counts the room freed objects leave
// between live ones.
func HeapMiB() float64 {
	inuse, _ := Heap()
	return inuse
}

// Heap collects and returns the heap in use (as HeapMiB) and the live
// objects' bytes alone, both in MiB.
func Heap() (inuse, live float64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20), float64(ms.HeapAlloc) / (1 << 20)
}
