package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ensureTools runs hack/build-tools.sh for the cluster binaries and returns
// their directory, or a reason to skip: a cold build takes about ten
// minutes, more than go test's default -timeout leaves after other tests.
func ensureTools(deadline time.Time, hasDeadline bool) (binDir, skip string, err error) {
	root, err := repoRoot()
	if err != nil {
		return "", "", err
	}
	script := filepath.Join(root, "hack", "build-tools.sh")
	check := exec.Command(script, append([]string{"--check"}, tools...)...)
	var stdout, stderr bytes.Buffer
	check.Stdout, check.Stderr = &stdout, &stderr
	checkErr := check.Run()
	var exitErr *exec.ExitError
	switch {
	case checkErr == nil:
		return lastLine(stdout.String()), "", nil
	case errors.As(checkErr, &exitErr) && exitErr.ExitCode() == 3:
		// Not built yet.
	default:
		return "", "", fmt.Errorf("%s --check: %v\n%s", script, checkErr, stderr.String())
	}
	if hasDeadline && time.Until(deadline) < coldBuildBudget {
		return "", "control-plane binaries are not built yet and a cold build takes about 10 minutes, " +
			"more than this test's -timeout leaves: run `make tools` (hack/build-tools.sh) once, " +
			"or go test -timeout 30m; skipping", nil
	}
	fmt.Fprintf(os.Stderr, "e2e cluster: building the control-plane binaries with %s (first run only, about 10 minutes)...\n", script)
	build := exec.Command(script, tools...)
	stdout.Reset()
	build.Stdout, build.Stderr = &stdout, os.Stderr
	if err := build.Run(); err != nil {
		return "", "", fmt.Errorf("%s: %v", script, err)
	}
	return lastLine(stdout.String()), "", nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// repoRoot walks up from the working directory to the go.mod of module
// github.com/gpuscale/gpuscale.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && moduleOf(data) == modulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

func moduleOf(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
