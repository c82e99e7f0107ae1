package simulate

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// maxMemoryCeiling is --max-memory's default on a large machine: several
// times what the largest built-in scenario and trace need.
const maxMemoryCeiling = 8 << 30

// defaultMaxMemory is --max-memory's default: three quarters of the memory
// this process may use (the machine's, or its cgroup's limit when lower),
// at most 8Gi. A fixed 8Gi let a run on a smaller machine die of an
// out-of-memory kill before the bound stopped it with a report.
func defaultMaxMemory() string {
	return maxMemoryFor(availableMemory(os.ReadFile))
}

// maxMemoryFor is the default for a process that may use avail bytes (0:
// unknown), as a quantity rounded down to MiB.
func maxMemoryFor(avail uint64) string {
	limit := uint64(maxMemoryCeiling)
	if avail > 0 {
		limit = min(limit, avail/4*3)
	}
	limit &^= 1<<20 - 1
	return resource.NewQuantity(int64(limit), resource.BinarySI).String()
}

// availableMemory is the least of the machine's memory (/proc/meminfo
// MemTotal) and the cgroup's limit (v2 memory.max, v1
// memory.limit_in_bytes); 0 when none can be read.
func availableMemory(read func(string) ([]byte, error)) uint64 {
	var least uint64
	take := func(v uint64) {
		if v > 0 && (least == 0 || v < least) {
			least = v
		}
	}
	if data, err := read("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
				if kb, err := strconv.ParseUint(f[1], 10, 64); err == nil {
					take(kb << 10)
				}
			}
		}
	}
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if data, err := read(path); err == nil {
			// "max" (v2) or a huge number (v1) means no limit; the
			// machine's memory bounds it then.
			if v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64); err == nil && v < 1<<60 {
				take(v)
			}
		}
	}
	return least
}
