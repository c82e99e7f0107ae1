// Package inputlimit reads input files and lines within documented size
// limits, so that a file such as /dev/zero, or one line of a gigabyte,
// is refused with its name and the limit instead of filling memory.
package inputlimit

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// The limits, documented in docs/refusals.md. Each is far above any real
// input of its kind: a ConfigMap holds at most 1 MiB, a scenario is
// written by hand, and a trace line is a few hundred bytes.
const (
	// ConfigFileBytes bounds a configuration file: the metrics adapter's
	// --config, --cloud-config, the kwok provider's configuration.
	ConfigFileBytes = 4 << 20
	// ScenarioFileBytes bounds a simulator scenario file.
	ScenarioFileBytes = 16 << 20
	// SecretFileBytes bounds a CA bundle or token file.
	SecretFileBytes = 1 << 20
	// TraceLineBytes bounds one line of a CSV trace.
	TraceLineBytes = 1 << 20
)

// ReadFile reads the file at path, refusing it when it holds more than
// limit bytes. A regular file is measured before it is read; anything else
// (a device, a pipe) is read up to the limit and no further.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > limit {
		return nil, tooLarge(path, st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, -1, limit)
	}
	return data, nil
}

func tooLarge(path string, size, limit int64) error {
	if size >= 0 {
		return fmt.Errorf("%s: %d bytes is over the %s limit for this input", path, size, Size(limit))
	}
	return fmt.Errorf("%s: more than the %s limit for this input", path, Size(limit))
}

// ErrLineTooLong is returned, wrapped with the name and line, by a reader
// from Lines when a line outgrows its limit.
var ErrLineTooLong = errors.New("line too long")

// Lines wraps r so that reading fails at the first line longer than limit
// bytes (not counting its newline), with an error naming name and the line
// number: "jobs.csv: line 3: longer than the 1 MiB limit for one line".
// Readers such as encoding/csv buffer a whole line, so without this one
// line could take all memory.
func Lines(name string, r io.Reader, limit int) io.Reader {
	return &lineReader{name: name, r: r, limit: limit, line: 1}
}

type lineReader struct {
	name  string
	r     io.Reader
	limit int
	line  int
	run   int // bytes of the current line read so far
}

func (l *lineReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for i := 0; i < n; i++ {
		if p[i] == '\n' {
			l.line++
			l.run = 0
			continue
		}
		l.run++
		if l.run > l.limit {
			return i, fmt.Errorf("%s: line %d: longer than the %s limit for one line: %w", l.name, l.line, Size(int64(l.limit)), ErrLineTooLong)
		}
	}
	return n, err
}

// Size prints a byte count as the limits are written: "4 MiB", "64 KiB".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
