package inputlimit

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	at := filepath.Join(dir, "at-limit.yaml")
	over := filepath.Join(dir, "over-limit.yaml")
	if err := os.WriteFile(at, []byte(strings.Repeat("a", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(over, []byte(strings.Repeat("a", 101)), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(at, 100); err != nil || len(data) != 100 {
		t.Errorf("a file at the limit: %d bytes, %v", len(data), err)
	}
	_, err := ReadFile(over, 100)
	if err == nil || !strings.Contains(err.Error(), over) || !strings.Contains(err.Error(), "101 bytes is over the 100 bytes limit") {
		t.Errorf("a file over the limit: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 100); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// A device without end is read up to the limit, not further.
func TestReadFileStopsAnEndlessDevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	start := time.Now()
	_, err := ReadFile("/dev/zero", 4<<20)
	if err == nil || !strings.Contains(err.Error(), "/dev/zero: more than the 4 MiB limit") {
		t.Errorf("ReadFile(/dev/zero) = %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
}

func TestLines(t *testing.T) {
	ok := "a,b\n" + strings.Repeat("x", 10) + "\n\n1,2"
	if got, err := io.ReadAll(Lines("t.csv", strings.NewReader(ok), 10)); err != nil || string(got) != ok {
		t.Errorf("lines within the limit: %q, %v", got, err)
	}
	long := "a,b\n1,2\n" + strings.Repeat("x", 11) + "\n"
	_, err := io.ReadAll(Lines("t.csv", strings.NewReader(long), 10))
	if !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "t.csv: line 3: longer than the 10 bytes limit") {
		t.Errorf("a long line: %v", err)
	}
	// A line of a gigabyte is refused after the limit, not read whole.
	_, err = io.ReadAll(Lines("t.csv", io.LimitReader(zeros{}, 1<<30), 1<<20))
	if !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "line 1: longer than the 1 MiB limit") {
		t.Errorf("a gigabyte line: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
