package chart_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpuscale/gpuscale/internal/run"
)

// TestMigrationGuideFlags keeps the flag tables of
// docs/migrating-from-cluster-autoscaler.md true: the table of kept flags
// has one row per flag of `gpuscale cluster-autoscaler` and no other, and
// no flag listed as missing is one gpuscale has.
func TestMigrationGuideFlags(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "migrating-from-cluster-autoscaler.md"))
	if err != nil {
		t.Fatal(err)
	}
	kept := section(string(text), "## Every flag gpuscale keeps")
	missing := section(string(text), "## Upstream flags gpuscale does not have")
	if kept == "" || missing == "" {
		t.Fatal("the guide lacks the sections of kept and of missing flags")
	}

	fs := pflag.NewFlagSet("cluster-autoscaler", pflag.ContinueOnError)
	run.NewClusterAutoscalerOptions().AddFlags(fs)

	rows := map[string]bool{}
	for _, line := range strings.Split(kept, "\n") {
		if rest, ok := strings.CutPrefix(line, "| `--"); ok {
			name, _, _ := strings.Cut(rest, "`")
			rows[name] = true
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if !rows[f.Name] {
			t.Errorf("--%s has no row in the table of kept flags", f.Name)
		}
		delete(rows, f.Name)
	})
	for name := range rows {
		t.Errorf("the table of kept flags has a row for --%s, which gpuscale cluster-autoscaler does not have", name)
	}

	// Only the first column names upstream's flags; the second may point
	// at gpuscale's own.
	for _, line := range strings.Split(missing, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range regexp.MustCompile("`--([a-z0-9-]+)`").FindAllStringSubmatch(cells[1], -1) {
			if fs.Lookup(m[1]) != nil {
				t.Errorf("--%s is listed as missing, but gpuscale cluster-autoscaler has it", m[1])
			}
		}
	}
}

// section returns the text under a heading, up to the next heading of the
// same level.
func section(text, heading string) string {
	_, rest, ok := strings.Cut(text, "\n"+heading+"\n")
	if !ok {
		return ""
	}
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}
