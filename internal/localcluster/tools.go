package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ModulePath is the module whose checkout holds hack/build-tools.sh.
const ModulePath = "github.com/gpuscale/gpuscale"

// ClusterTools are the binaries a cluster needs; PrometheusTool is the
// Prometheus server. EnsureTools with no names builds all of them.
func ClusterTools() []string {
	return []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "kwokctl"}
}

// PrometheusTool is the tool name of the Prometheus server in hack/build-tools.sh.
const PrometheusTool = "prometheus"

// AllTools returns ClusterTools and PrometheusTool.
func AllTools() []string { return append(ClusterTools(), PrometheusTool) }

// stillBuildingEvery is how often EnsureTools reports a build that is still
// running, so a long link does not look like a hang.
const stillBuildingEvery = 30 * time.Second

// EnsureTools builds the named tools (all of AllTools when none are named)
// with hack/build-tools.sh, or reuses them when already built, and returns
// the directory that holds them. The script's progress goes to progress
// (nil discards it), with a line every 30 s while one binary builds. A cold
// build takes about ten minutes on two cores. The checkout is found by
// walking up from the working directory (see RepoRoot).
func EnsureTools(ctx context.Context, progress io.Writer, names ...string) (string, error) {
	if len(names) == 0 {
		names = AllTools()
	}
	if progress == nil {
		progress = io.Discard
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	binDir, built, err := checkTools(ctx, root, names)
	if err != nil || built {
		return binDir, err
	}
	script := filepath.Join(root, "hack", "build-tools.sh")
	fmt.Fprintf(progress, "building %s with hack/build-tools.sh (first run only, about 10 minutes on 2 cores)\n", strings.Join(names, ", "))
	cmd := exec.CommandContext(ctx, script, names...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	done := make(chan struct{})
	go func() {
		defer close(done)
		relayProgress(pr, progress, stillBuildingEvery)
	}()
	err = cmd.Run()
	pw.Close()
	<-done
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", script, strings.Join(names, " "), err)
	}
	return lastLine(stdout.String()), nil
}

// CheckTools reports whether the named tools (all of AllTools when none are
// named) are built, without building anything, and the directory that holds
// or will hold them.
func CheckTools(ctx context.Context, names ...string) (binDir string, built bool, err error) {
	if len(names) == 0 {
		names = AllTools()
	}
	root, err := RepoRoot()
	if err != nil {
		return "", false, err
	}
	return checkTools(ctx, root, names)
}

func checkTools(ctx context.Context, root string, names []string) (string, bool, error) {
	script := filepath.Join(root, "hack", "build-tools.sh")
	cmd := exec.CommandContext(ctx, script, append([]string{"--check"}, names...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return lastLine(stdout.String()), true, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() == 3: // not built yet
		return lastLine(stdout.String()), false, nil
	default:
		return "", false, fmt.Errorf("%s --check %s: %w\n%s", script, strings.Join(names, " "), err, stderr.String())
	}
}

// relayProgress copies the build script's lines to w and, while a binary
// builds, adds a line every interval saying for how long.
func relayProgress(r io.Reader, w io.Writer, interval time.Duration) {
	var mu sync.Mutex
	current, since := "", time.Time{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				mu.Lock()
				if current != "" {
					fmt.Fprintf(w, "  still building %s (%s)\n", current, time.Since(since).Round(time.Second))
				}
				mu.Unlock()
			}
		}
	}()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		mu.Lock()
		fmt.Fprintln(w, "  "+strings.TrimPrefix(line, "build-tools: "))
		if name, ok := buildingName(line); ok {
			current, since = name, time.Now()
		} else if strings.Contains(line, "build-tools: built ") {
			current = ""
		}
		mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

// buildingName extracts X from the script's "build-tools: building X ..." line.
func buildingName(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "build-tools: building ")
	if !ok {
		return "", false
	}
	name, _, _ := strings.Cut(rest, " ")
	return name, name != ""
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// RepoRoot walks up from the working directory to the go.mod of module
// github.com/gpuscale/gpuscale: the tools are built from its hack/ folder.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && moduleOf(data) == ModulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s in the working directory or above it: run from the gpuscale checkout", ModulePath)
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
