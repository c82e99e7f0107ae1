package app

import (
	"context"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpuscale/gpuscale/internal/run"
)

// TestUnsupportedUpstreamFlags keeps the list true: sorted, none of them a
// flag gpuscale has, and exactly the flags docs/flags.md lists under
// "Upstream flags gpuscale does not have".
func TestUnsupportedUpstreamFlags(t *testing.T) {
	names := UnsupportedUpstreamFlags()
	if len(names) == 0 || !sort.StringsAreSorted(names) {
		t.Fatalf("list %v: want a sorted, non-empty list", names)
	}
	fs := pflag.NewFlagSet("cluster-autoscaler", pflag.ContinueOnError)
	run.NewClusterAutoscalerOptions().AddFlags(fs)
	listed := map[string]bool{}
	for i, n := range names {
		if i > 0 && names[i-1] == n {
			t.Errorf("--%s listed twice", n)
		}
		if fs.Lookup(n) != nil {
			t.Errorf("--%s is listed as unsupported, but gpuscale cluster-autoscaler has it", n)
		}
		listed[n] = true
	}

	doc, err := os.ReadFile("../../../docs/flags.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Upstream flags gpuscale does not have\n")
	if !ok {
		t.Fatal("docs/flags.md has no section \"Upstream flags gpuscale does not have\"")
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`--([a-z0-9-]+)`").FindAllStringSubmatch(section, -1) {
		documented[m[1]] = true
		if !listed[m[1]] {
			t.Errorf("docs/flags.md lists --%s as unsupported; UnsupportedUpstreamFlags does not", m[1])
		}
	}
	for _, n := range names {
		if !documented[n] {
			t.Errorf("--%s is unsupported but docs/flags.md does not list it", n)
		}
	}
}

func TestUnknownFlagMessages(t *testing.T) {
	refuse := runners{clusterAutoscaler: func(context.Context, *run.ClusterAutoscalerOptions) error {
		t.Error("started with an unknown flag")
		return nil
	}}
	cases := []struct {
		args      []string
		want      []string
		wantNoDoc bool
	}{
		{[]string{"cluster-autoscaler", "--estimator=binpacking"},
			[]string{"unknown flag: --estimator: an upstream Cluster Autoscaler flag that gpuscale does not support", UnsupportedFlagsDoc}, false},
		{[]string{"cluster-autoscaler", "--cloud-provider=aws", "--max-bulk-soft-taint-time", "3s"},
			[]string{"unknown flag: --max-bulk-soft-taint-time: an upstream", UnsupportedFlagsDoc}, false},
		{[]string{"cluster-autoscaler", "--scale-down-enable=false"},
			[]string{"unknown flag: --scale-down-enable: neither gpuscale's nor the upstream Cluster Autoscaler's", "--help"}, true},
		{[]string{"cluster-autoscaler", "-q"}, []string{"unknown shorthand flag: 'q' in -q", "--help"}, true},
		// Other commands keep pflag's message.
		{[]string{"simulate", "--estimator"}, []string{"unknown flag: --estimator"}, true},
		// simulate sends a decision flag to --set.
		{[]string{"simulate", "--profile", "gpu-cost"}, []string{"unknown flag: --profile: a decision flag of cluster-autoscaler, which simulate takes in --set (or --compare): --set profile=VALUE"}, true},
		{[]string{"simulate", "--expander=price"}, []string{"unknown flag: --expander: a decision flag", "--set expander=VALUE"}, true},
	}
	for _, c := range cases {
		_, err := executeWith(t, refuse, c.args...)
		if err == nil {
			t.Errorf("%v: no error", c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q lacks %q", c.args, err, w)
			}
		}
		if c.wantNoDoc && strings.Contains(err.Error(), UnsupportedFlagsDoc) {
			t.Errorf("%v: error %q points to the unsupported list", c.args, err)
		}
	}
}
