package autoscalerflags_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/autoscalerflags"
)

// Settings go through the same flag definitions as the command line:
// every decision flag, repeatable ones repeated, later groups over earlier.
func TestParse(t *testing.T) {
	base, err := autoscalerflags.ParseSettings("expander=price, --cores-total=0:1000000,gpu-total=a10g:0:8,gpu-total=l4:0:2")
	if err != nil {
		t.Fatal(err)
	}
	over, err := autoscalerflags.ParseSettings("expander=least-waste,price,scan-interval=1m,skip-nodes-with-system-pods=false")
	if err != nil {
		t.Fatal(err)
	}
	d, err := autoscalerflags.Parse(base, over)
	if err != nil {
		t.Fatal(err)
	}
	o := d.Autoscaler
	if o.ScaleUp.Expander != "least-waste,price" || o.Limits.Cores.Max != 1000000 || len(o.Limits.GPUs) != 2 ||
		d.ScanInterval != time.Minute || o.ScaleDown.SkipNodesWithSystemPods {
		t.Errorf("decision %+v scan %s", o, d.ScanInterval)
	}
	if def, err := autoscalerflags.Parse(); err != nil || d.ScanInterval == def.ScanInterval {
		t.Errorf("defaults: %v %v", def.ScanInterval, err)
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ settings, want string }{
		{"scale-down-time=5m", `--scale-down-time: not a decision flag of cluster-autoscaler`},
		{"kubeconfig=/k", `--kubeconfig: not a decision flag`},
		{"max-nodes-total=many", `--max-nodes-total: invalid argument "many"`},
		{"cores-total=9", `--cores-total: want min:max, got "9"`},
		{"gpu-total=a:0:1,gpu-total=a:0:2", `--gpu-total: GPU type "a" given twice`},
		{"expendable-pods-priority-cutoff=9999999999", `--expendable-pods-priority-cutoff: must fit a pod priority (int32), got 9999999999`},
		{"scale-down-utilization-threshold=2,expander=cheapest", `--expander: unknown expander "cheapest"`},
		{"consolidation-min-savings-per-pod=-0.01", `--consolidation-min-savings-per-pod: must be at least 0 and at most 1000, got -0.01`},
	} {
		s, err := autoscalerflags.ParseSettings(tc.settings)
		if err == nil {
			_, err = autoscalerflags.Parse(s)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.settings, err, tc.want)
		}
	}
	if _, err := autoscalerflags.ParseSettings("expander"); err == nil {
		t.Error("a setting without a value was accepted")
	}
}

func TestDefaultsAreTheCoreDefaults(t *testing.T) {
	d, err := autoscalerflags.Parse()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Autoscaler, autoscaler.DefaultOptions()) || d.ScanInterval != 10*time.Second {
		t.Errorf("defaults differ:\n%+v\n%+v", d.Autoscaler, autoscaler.DefaultOptions())
	}
}

func TestSettingsOfAScenarioMap(t *testing.T) {
	s, err := autoscalerflags.SettingsOf(map[string]any{"expander": "price", "balancing-ignore-label": []any{"a", "b"}, "max-nodes-total": 40})
	if err != nil {
		t.Fatal(err)
	}
	if got := autoscalerflags.Label(s); got != "balancing-ignore-label=a,balancing-ignore-label=b,expander=price,max-nodes-total=40" {
		t.Errorf("settings %s", got)
	}
	if _, err := autoscalerflags.SettingsOf(map[string]any{"expander": nil}); err == nil {
		t.Error("a flag with no value was accepted")
	}
}

// A profile sets its flags unless they are given with it: on the command
// line, flags given anywhere win; in settings groups, the profile
// overrides earlier groups (a scenario file) and its own group's other
// settings override it.
func TestProfile(t *testing.T) {
	scenario := []autoscalerflags.Setting{{Name: "expander", Value: "least-waste"}}
	d, err := autoscalerflags.Parse(scenario, []autoscalerflags.Setting{{Name: "profile", Value: "gpu-cost"}})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Autoscaler.Consolidation.Enabled || d.Autoscaler.ScaleUp.Expander != "price,least-waste" {
		t.Errorf("profile over the scenario: consolidation %v, expander %q", d.Autoscaler.Consolidation.Enabled, d.Autoscaler.ScaleUp.Expander)
	}
	own, _ := autoscalerflags.ParseSettings("expander=random,profile=gpu-cost")
	if d, _ = autoscalerflags.Parse(own); d.Autoscaler.ScaleUp.Expander != "random" || !d.Autoscaler.Consolidation.Enabled {
		t.Errorf("a flag beside the profile: expander %q", d.Autoscaler.ScaleUp.Expander)
	}
	f := autoscalerflags.New()
	if err := f.FlagSet().Parse([]string{"--expander=most-pods", "--profile=gpu-cost"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(); err != nil || f.Decision.Autoscaler.ScaleUp.Expander != "most-pods" || !f.Decision.Autoscaler.Consolidation.Enabled {
		t.Errorf("command line: %v, expander %q", err, f.Decision.Autoscaler.ScaleUp.Expander)
	}
	if _, err := autoscalerflags.Parse([]autoscalerflags.Setting{{Name: "profile", Value: "cheap"}}); err == nil || !strings.Contains(err.Error(), `--profile: unknown profile "cheap"`) {
		t.Errorf("unknown profile: %v", err)
	}
}

// --bypassed-scheduler-names takes a comma-separated list, as upstream's,
// and repeats add to it.
func TestBypassedSchedulerNames(t *testing.T) {
	s, err := autoscalerflags.ParseSettings("bypassed-scheduler-names=kai-scheduler,volcano,bypassed-scheduler-names=yunikorn")
	if err != nil {
		t.Fatal(err)
	}
	d, err := autoscalerflags.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Autoscaler.Pending.BypassedSchedulers, []string{"kai-scheduler", "volcano", "yunikorn"}; !reflect.DeepEqual(got, want) {
		t.Errorf("bypassed = %q, want %q", got, want)
	}
	f := autoscalerflags.New()
	if err := f.FlagSet().Parse([]string{"--bypassed-scheduler-names=kai-scheduler,,volcano"}); err != nil {
		t.Fatal(err)
	}
	want := `--bypassed-scheduler-names: a scheduler name must not be empty, got ["kai-scheduler" "" "volcano"]`
	if err := f.Validate(); err == nil || err.Error() != want {
		t.Errorf("empty name: %v, want %q", err, want)
	}
	if def, err := autoscalerflags.Parse(); err != nil || len(def.Autoscaler.Pending.BypassedSchedulers) != 0 {
		t.Errorf("default bypasses %q (%v), want none", def.Autoscaler.Pending.BypassedSchedulers, err)
	}
}
