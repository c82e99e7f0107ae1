package simulate

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// --max-memory defaults to three quarters of what the process may use, at
// most 8Gi, so that a small machine stops a run with a report before the
// kernel kills it.
func TestMaxMemoryDefault(t *testing.T) {
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(path string) ([]byte, error) {
			if v, ok := m[path]; ok {
				return []byte(v), nil
			}
			return nil, os.ErrNotExist
		}
	}
	meminfo := func(gib uint64) string {
		return fmt.Sprintf("MemTotal:       %d kB\nMemFree:        1024 kB\n", gib<<20)
	}
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"a 4 GiB machine", map[string]string{"/proc/meminfo": meminfo(4)}, "3Gi"},
		{"a 64 GiB machine", map[string]string{"/proc/meminfo": meminfo(64)}, "8Gi"},
		{"a 2 GiB cgroup (v2) on a 64 GiB machine", map[string]string{"/proc/meminfo": meminfo(64), "/sys/fs/cgroup/memory.max": "2147483648\n"}, "1536Mi"},
		{"no cgroup limit (v2)", map[string]string{"/proc/meminfo": meminfo(4), "/sys/fs/cgroup/memory.max": "max\n"}, "3Gi"},
		{"a 1 GiB cgroup (v1)", map[string]string{"/proc/meminfo": meminfo(4), "/sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824\n"}, "768Mi"},
		{"nothing readable", map[string]string{}, "8Gi"},
	} {
		if got := maxMemoryFor(availableMemory(files(c.files))); got != c.want {
			t.Errorf("%s: default %s, want %s", c.name, got, c.want)
		}
	}
}

// The wait for work that cannot be interrupted ends with the context.
func TestUntilDoneEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	block := make(chan struct{})
	defer close(block)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err := untilDone(ctx, func() (int, error) { <-block; return 1, nil })
	if err == nil || !strings.Contains(err.Error(), "interrupted: context canceled") || time.Since(start) > 5*time.Second {
		t.Errorf("untilDone = %v after %v, want it interrupted at once", err, time.Since(start))
	}
	if v, err := untilDone(context.Background(), func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("untilDone = %d, %v", v, err)
	}
}
