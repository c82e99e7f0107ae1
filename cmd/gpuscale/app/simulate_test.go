package app

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The seed walkthrough through the command line: a summary, a CSV time
// series with a header and rows, and an HTML page with charts.
func TestSimulateWritesSummaryCSVAndHTML(t *testing.T) {
	dir := t.TempDir()
	csvPath, htmlPath := filepath.Join(dir, "w.csv"), filepath.Join(dir, "w.html")
	out, err := execute(t, "simulate", "--builtin", "seed-walkthrough", "--no-progress", "--csv", csvPath, "--html", htmlPath)
	if err != nil {
		t.Fatalf("simulate: %v\n%s", err, out)
	}
	for _, want := range []string{"lower bound, per pod ($)", "cost / lower bound", "fluid bound ($)", "pending wait p50 / p90 / p99",
		"scale-ups (nodes added)", "HPA replica changes"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v", err)
	}
	if len(rows) < 3 {
		t.Fatalf("CSV has %d rows, want a header and a time series", len(rows))
	}
	for _, r := range rows[1:] {
		if len(r) != len(rows[0]) {
			t.Fatalf("CSV row %v has %d fields, header %d", r, len(r), len(rows[0]))
		}
	}
	html, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "echarts") {
		t.Error("HTML report has no charts")
	}
	if !strings.Contains(string(html), "lower bound (per pod): $") {
		t.Error("HTML report does not name the lower bound")
	}
}

// --compare runs each option set and shows them side by side.
func TestSimulateCompareShowsEachRun(t *testing.T) {
	out, err := execute(t, "simulate", "--builtin", "seed-walkthrough", "--no-progress",
		"--compare", "expander=price", "--compare", "expander=least-waste")
	if err != nil {
		t.Fatalf("simulate --compare: %v\n%s", err, out)
	}
	for _, want := range []string{"expander=price", "expander=least-waste", "lower bound, per pod ($)"} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out)
		}
	}
}

func TestSimulateBadInputNamesIt(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--builtin", "no-such-scenario"}, "no-such-scenario"},
		{[]string{"--builtin", "seed-walkthrough", "--set", "expander=cheapest"}, "cheapest"},
		{[]string{"--scenario", filepath.Join(t.TempDir(), "missing.yaml")}, "missing.yaml"},
	} {
		out, err := execute(t, append([]string{"simulate", "--no-progress", "--quiet"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("simulate %v: err = %v, want one naming %q\n%s", tc.args, err, tc.want, out)
		}
	}
}
