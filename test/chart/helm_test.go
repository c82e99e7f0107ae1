// Package chart_test checks the Helm chart in deploy/charts/gpuscale: helm
// lint, what helm template renders with each values file (arguments the
// binary accepts, leader election, PodDisruptionBudgets, ServiceMonitors,
// APIServices, cloud identity annotations), RBAC that grants exactly what
// the code calls, and that deploy/manifests is what the chart renders.
//
// The helm binary comes from hack/build-tools.sh (pinned in hack/tools/helm);
// the tests skip, saying so, until it is built (make tools).
package chart_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const (
	releaseName = "gpuscale"
	namespace   = "kube-system"
	chartDir    = "deploy/charts/gpuscale"
)

// valuesFiles are the values files shipped beside the chart; "" is the
// chart's values.yaml alone.
var valuesFiles = []string{"", "values-aws.yaml", "values-gce.yaml", "values-kwok.yaml"}

// repoRoot is the checkout holding this package (test/chart).
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

var (
	helmOnce sync.Once
	helmPath string
	helmSkip string
)

// helmBinary returns the pinned helm binary, or skips the test when
// hack/build-tools.sh has not built it.
func helmBinary(t testing.TB) string {
	t.Helper()
	helmOnce.Do(func() {
		cmd := exec.Command(filepath.Join(repoRoot(t), "hack", "build-tools.sh"), "--check", "helm")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit) && exit.ExitCode() == 3:
			helmSkip = "helm is not built yet: run `hack/build-tools.sh helm` (or make tools); skipping the chart tests"
		case err != nil:
			helmSkip = fmt.Sprintf("hack/build-tools.sh --check helm: %v: %s", err, stderr.String())
		default:
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			helmPath = filepath.Join(lines[len(lines)-1], "helm")
		}
	})
	if helmSkip != "" {
		t.Skip(helmSkip)
	}
	trackInputs(t)
	return helmPath
}

var trackOnce sync.Once

// trackInputs reads every file helm and the scripts read: go test caches a
// result by the files the test process itself opened, and helm runs in a
// child process, so without this an edited chart could pass from the cache.
func trackInputs(t testing.TB) {
	trackOnce.Do(func() {
		root := repoRoot(t)
		for _, dir := range []string{"deploy", filepath.Join("hack", "tools", "helm")} {
			_ = filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					_, _ = os.ReadFile(path)
				}
				return nil
			})
		}
		_, _ = os.ReadFile(filepath.Join(root, "hack", "build-tools.sh"))
	})
}

// helm runs the pinned helm in the repository root and returns its stdout;
// a failure returns stderr in the error.
func helm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Dir = repoRoot(t)
	// No user configuration, cache or plugins may change what is rendered.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// templateArgs are the helm template arguments for one values file, as
// deploy/render-manifests.sh passes them.
func templateArgs(values string, extra ...string) []string {
	args := []string{"template", releaseName, chartDir, "--namespace", namespace}
	if values != "" {
		args = append(args, "--values", filepath.Join(chartDir, values))
	}
	return append(args, extra...)
}

// render runs helm template and decodes the objects.
func render(t testing.TB, values string, extra ...string) objects {
	t.Helper()
	out, err := helm(t, templateArgs(values, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(out)
	if err != nil {
		t.Fatalf("decoding helm template output for %q: %v", values, err)
	}
	return objs
}

// objects are rendered objects, keyed "Kind/namespace/name" (namespace
// empty for cluster-scoped ones).
type objects map[string]*unstructured.Unstructured

func key(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func decode(text string) (objects, error) {
	objs := objects{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if err == io.EOF {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		k := key(u.GetKind(), u.GetNamespace(), u.GetName())
		if objs[k] != nil {
			return nil, fmt.Errorf("%s rendered twice", k)
		}
		objs[k] = u
	}
}

// typed converts the object at key into out (a typed API object), failing
// the test when it is missing.
func (o objects) typed(t testing.TB, k string, out any) {
	t.Helper()
	u := o[k]
	if u == nil {
		t.Fatalf("%s not rendered; rendered: %s", k, strings.Join(o.keys(), ", "))
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s: %v", k, err)
	}
}

func (o objects) keys() []string {
	out := make([]string, 0, len(o))
	for k := range o {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ofKind returns the objects of a kind, sorted by key.
func (o objects) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, k := range o.keys() {
		if o[k].GetKind() == kind {
			out = append(out, o[k])
		}
	}
	return out
}

// runScript runs a repository script with the pinned helm.
func runScript(t testing.TB, script string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(script, args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "HELM="+helmBinary(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", script, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
