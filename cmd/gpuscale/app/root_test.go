package app

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuscale/gpuscale/internal/run"
)

// execute runs the command tree with args and returns what it printed.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return executeWith(t, runners{clusterAutoscaler: run.ClusterAutoscaler}, args...)
}

// executeWith runs the command tree with stand-in runners.
func executeWith(t *testing.T, r runners, args ...string) (string, error) {
	t.Helper()
	restoreLogging(t)
	root := newRootCommand(r)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func TestRootHelp(t *testing.T) {
	out, err := execute(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GPU workloads", "cluster-autoscaler", "version"} {
		if !strings.Contains(out, want) {
			t.Errorf("gpuscale --help lacks %q:\n%s", want, out)
		}
	}
}

func TestClusterAutoscalerHelp(t *testing.T) {
	out, err := execute(t, "cluster-autoscaler", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"--scale-down-utilization-threshold float", "(default 0.5)", "--nodes min:max:name",
		`--namespace string`, `(default "kube-system")`, "--expander string", `(default "random")`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("cluster-autoscaler --help lacks %q", want)
		}
	}
}

func TestVersion(t *testing.T) {
	out, err := execute(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "gpuscale ") || !strings.Contains(out, "go:") {
		t.Errorf("version printed:\n%s", out)
	}
}

func TestBadFlagsStopStartUp(t *testing.T) {
	_, err := execute(t, "cluster-autoscaler", "--expander=cheapest", "--kubeconfig=/does/not/exist")
	if err == nil || !strings.Contains(err.Error(), `--expander: unknown expander "cheapest"`) {
		t.Errorf("err = %v", err)
	}
}

// TestFlagsDocListsEveryFlag keeps docs/flags.md true: every flag, with
// the default the binary has.
func TestFlagsDocListsEveryFlag(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/flags.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\| `([^`]*)` \\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = m[2]
	}
	fs := pflag.NewFlagSet("doc", pflag.ContinueOnError)
	run.NewClusterAutoscalerOptions().AddFlags(fs)
	var missing []string
	fs.VisitAll(func(f *pflag.Flag) {
		def, ok := documented[f.Name]
		switch {
		case !ok:
			missing = append(missing, f.Name)
		case !sameDefault(f, def):
			t.Errorf("docs/flags.md: --%s default %q, the binary has %q", f.Name, def, f.DefValue)
		}
		delete(documented, f.Name)
	})
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/flags.md lacks %v", missing)
	}
	for name := range documented {
		t.Errorf("docs/flags.md lists --%s, which the binary does not have", name)
	}
}

// sameDefault compares a flag's default with the table's, which writes
// durations short ("15m", not "15m0s") and empty values as "".
func sameDefault(f *pflag.Flag, doc string) bool {
	if f.Value.Type() == "duration" {
		a, err1 := time.ParseDuration(f.DefValue)
		b, err2 := time.ParseDuration(doc)
		return err1 == nil && err2 == nil && a == b
	}
	if f.DefValue == "[]" {
		return doc == ""
	}
	return f.DefValue == doc
}
