package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestStampedVersion builds the binary with the link flags `make` uses and
// checks that `gpuscale version` prints the version and commit given, and
// that the Dockerfile stamps the same variables from its build arguments.
func TestStampedVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gpuscale binary; skipped with -short")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH: skipping the check of the Makefile's version stamp")
	}
	const version, commit = "v9.8.7-test", "0123456789abcdef0123456789abcdef01234567"
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mk := exec.Command("make", "-s", "--no-print-directory", "print-ldflags", "VERSION="+version, "COMMIT="+commit)
	mk.Dir = root
	out, err := mk.Output()
	if err != nil {
		t.Fatalf("make print-ldflags: %v", err)
	}
	ldflags := strings.TrimSpace(string(out))

	// The Dockerfile sets the same variables, from VERSION and COMMIT.
	docker, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	symbols := func(text, versionValue, commitValue string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`-X (\S+)=(\S+?)["\s]`).FindAllStringSubmatch(text+" ", -1) {
			if m[2] == versionValue || m[2] == commitValue {
				out = append(out, m[1]+"="+map[bool]string{true: "VERSION", false: "COMMIT"}[m[2] == versionValue])
			}
		}
		sort.Strings(out)
		return out
	}
	makeSyms := symbols(ldflags, version, commit)
	dockerSyms := symbols(string(docker), "${VERSION}", "${COMMIT}")
	if len(makeSyms) != 2 || strings.Join(makeSyms, " ") != strings.Join(dockerSyms, " ") {
		t.Errorf("the Makefile stamps %v, the Dockerfile %v; want the same version and commit variables", makeSyms, dockerSyms)
	}

	bin := filepath.Join(t.TempDir(), "gpuscale")
	build := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", ldflags, err, out)
	}
	got, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("gpuscale version: %v\n%s", err, got)
	}
	for _, want := range []string{"gpuscale " + version + "\n", "commit:   " + commit + "\n"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("gpuscale version printed\n%s\nwant %q", got, want)
		}
	}
}
