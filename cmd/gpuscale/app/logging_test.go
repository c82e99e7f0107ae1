package app

import (
	"bytes"
	"context"
	"encoding/json"
	goflag "flag"
	"log/slog"
	"sort"
	"strings"
	"testing"

	"k8s.io/klog/v2"

	"github.com/gpuscale/gpuscale/internal/run"
)

// restoreLogging puts slog's default logger back and detaches klog from
// the test's handler when the test ends.
func restoreLogging(t *testing.T) {
	t.Helper()
	old := slog.Default()
	t.Cleanup(func() {
		slog.SetDefault(old)
		klog.ClearLogger()
		installKlogVerbosity(0)
	})
}

// installKlogVerbosity sets klog's -v as installLogger does.
func installKlogVerbosity(v int) {
	installLogger(slog.Default(), v)
	klog.ClearLogger()
}

// records decodes JSON log lines.
func records(t *testing.T, text string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func messages(recs []map[string]any) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r["msg"].(string))
	}
	return out
}

// TestKlogGoesThroughTheHandler: what client-go and the API server
// libraries log through klog comes out of the same handler as slog's
// records, gated by --v.
func TestKlogGoesThroughTheHandler(t *testing.T) {
	restoreLogging(t)
	for _, c := range []struct {
		v    int
		want []string
	}{
		{0, []string{"slog info", "klog info", "klog error"}},
		{2, []string{"slog info", "slog debug", "klog info", "klog v2", "klog error"}},
		{5, []string{"slog info", "slog debug", "klog info", "klog v2", "klog v5", "klog error"}},
	} {
		var buf bytes.Buffer
		logger, err := newLogger(&buf, logFormatJSON, handlerLevel(c.v, false))
		if err != nil {
			t.Fatal(err)
		}
		installLogger(logger, c.v)
		slog.Info("slog info")
		slog.Debug("slog debug")
		klog.Info("klog info")
		klog.V(2).Info("klog v2")
		klog.V(5).Info("klog v5")
		klog.V(6).Info("klog v6")
		klog.Background().V(6).Info("klog contextual v6")
		klog.ErrorS(nil, "klog error")
		got := messages(records(t, buf.String()))
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("--v=%d logged %q, want %q", c.v, got, c.want)
		}
	}
}

// TestVModule: with --vmodule, klog's per-file verbosity decides, so the
// handler passes every V(n) record klog lets through.
func TestVModule(t *testing.T) {
	restoreLogging(t)
	var buf bytes.Buffer
	logger, err := newLogger(&buf, logFormatJSON, handlerLevel(0, true))
	if err != nil {
		t.Fatal(err)
	}
	installLogger(logger, 0)
	fs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Set("vmodule", "logging_test=6"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fs.Set("vmodule", "") })
	klog.V(6).Info("klog v6 here")
	klog.V(7).Info("klog v7 here")
	if got := messages(records(t, buf.String())); strings.Join(got, "|") != "klog v6 here" {
		t.Errorf("--vmodule=logging_test=6 logged %q, want only the V(6) record", got)
	}
}

func TestLogFormats(t *testing.T) {
	var text bytes.Buffer
	logger, err := newLogger(&text, logFormatText, slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("hello", "node", "n1")
	if !strings.Contains(text.String(), `level=INFO msg=hello node=n1`) {
		t.Errorf("text format wrote %q", text.String())
	}
	if _, err := newLogger(&text, "xml", slog.LevelInfo); err == nil || err.Error() != `--log-format: want text or json, got "xml"` {
		t.Errorf("newLogger(xml) error %v", err)
	}
}

// TestStartUpLogNamesTheBuild: long-running commands log their version and
// commit first, in the chosen format; one-shot commands do not.
func TestStartUpLogNamesTheBuild(t *testing.T) {
	restoreLogging(t)
	loop := runners{clusterAutoscaler: func(context.Context, *run.ClusterAutoscalerOptions) error {
		slog.Info("loop running")
		return nil
	}}
	out, err := executeWith(t, loop, "--log-format=json", "cluster-autoscaler", "--cloud-provider=kwok", "--v=2")
	if err != nil {
		t.Fatal(err)
	}
	recs := records(t, out)
	if len(recs) != 2 || recs[0]["msg"] != "gpuscale cluster-autoscaler starting" || recs[1]["msg"] != "loop running" {
		t.Fatalf("logged %q, want the start-up line and then the loop's", messages(recs))
	}
	for _, k := range []string{"version", "commit", "go"} {
		if _, ok := recs[0][k]; !ok {
			t.Errorf("start-up line %v lacks %s", recs[0], k)
		}
	}
	if out, err := execute(t, "--log-format=json", "simulate", "--list"); err != nil || strings.Contains(out, "starting") {
		t.Errorf("simulate --list: %v, printed %q", err, out)
	}
	if _, err := execute(t, "--log-format=yaml", "version"); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("--log-format=yaml: err %v", err)
	}
}

// TestLongRunningCommands names commands that exist: a renamed command
// would lose its start-up line.
func TestLongRunningCommands(t *testing.T) {
	var got []string
	for _, c := range NewRootCommand().Commands() {
		if longRunning(c) {
			got = append(got, c.Name())
		}
	}
	sort.Strings(got)
	if want := "cluster-autoscaler dcgm-sim demo inference-sim metrics-adapter"; strings.Join(got, " ") != want {
		t.Errorf("long-running commands %q, want %s", got, want)
	}
}
