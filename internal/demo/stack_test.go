package demo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A child that exits before it is ready (its port was taken) is started
// again on another port; one that keeps failing is reported.
func TestChildOnFreePortRetriesAChildThatExits(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 serves HTTP for this test and is missing")
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "failed-once")
	// Fails the first time, then serves HTTP on the port it is given.
	script := filepath.Join(dir, "child.sh")
	body := fmt.Sprintf(`#!/bin/sh
if [ ! -f %q ]; then touch %q; echo "address already in use" >&2; exit 1; fi
exec %q -m http.server --bind 127.0.0.1 "$1"
`, marker, marker, python)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &stack{opts: Options{Binary: script}, dir: dir}
	defer s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ports []int
	proc, err := s.childOnFreePort(ctx, "child", func(port int) (string, []string) {
		ports = append(ports, port)
		return fmt.Sprintf("http://127.0.0.1:%d/", port), []string{fmt.Sprint(port)}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 2 || exited(proc) {
		t.Errorf("tried ports %v, want 2 attempts and a running child", ports)
	}
	if len(s.procs) != 1 || s.procs[0] != proc {
		t.Errorf("%d processes kept for stop, want only the running one", len(s.procs))
	}

	// Always failing: three attempts, then the error with the log's news.
	failing := filepath.Join(dir, "fail.sh")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\necho no luck >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.opts.Binary = failing
	ports = nil
	_, err = s.childOnFreePort(ctx, "failing", func(port int) (string, []string) {
		ports = append(ports, port)
		return fmt.Sprintf("http://127.0.0.1:%d/", port), nil
	})
	if err == nil || !strings.Contains(err.Error(), "no luck") || len(ports) != 3 {
		t.Errorf("err = %v after %d attempts, want the child's log after 3", err, len(ports))
	}
}
