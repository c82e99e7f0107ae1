package scenario

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/autoscalerflags"
)

const minimal = `
name: m
nodeGroups:
- name: cpu
  maxSize: 3
  pricePerHour: 0.5
  capacity: {cpu: "4", memory: 16Gi}
workloads:
- name: w
  pod: {requests: {cpu: "1"}}
  jobs: [{at: 1m, duration: 10m}]
`

func TestParseFillsDefaults(t *testing.T) {
	s, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if s.ProvisioningDelay.Duration != DefaultProvisioningDelay || s.DevicePluginDelay.Duration != DefaultDevicePluginDelay ||
		s.SampleInterval.Duration != DefaultSampleInterval || s.Scheduler.Scoring != LeastAllocated ||
		*s.NodeGroups[0].InitialSize != 0 || s.Workloads[0].Namespace != DefaultNamespace || s.Workloads[0].Jobs[0].Count != 1 {
		t.Errorf("defaults not filled: %+v", s)
	}
}

// Every mistake is reported with the path of the field and the value.
func TestParseNamesTheField(t *testing.T) {
	for _, c := range []struct {
		name, from, to, want string
	}{
		{"unknown field", "maxSize: 3", "maxSize: 3\n  gpus: 2", `unknown field "nodeGroups[0].gpus"`},
		// encoding/json would take "MaxSize" for maxSize.
		{"field in another case", "maxSize: 3", "MaxSize: 3", `unknown field "nodeGroups[0].MaxSize"`},
		{"field given twice", "maxSize: 3", "maxSize: 3\n  maxSize: 4", `already set in map`},
		{"max below min", "maxSize: 3", "maxSize: 3\n  minSize: 4", "nodeGroups[0].maxSize: must be at least minSize (4), got 3"},
		{"interruption trace count", "maxSize: 3", "maxSize: 3\n  interruptions: [{at: 1h, count: 0}]", "nodeGroups[0].interruptions[0].count: must be from 1 to 100000, got 0"},
		{"negative interruption rate", "maxSize: 3", "maxSize: 3\n  interruptionsPerHour: -1", "nodeGroups[0].interruptionsPerHour: must be a finite number of at least 0, got -1"},
		{"interruption taint not a key", "name: m", "name: m\ninterruptionTaint: bad key", `interruptionTaint: "bad key": `},
		{"negative interruption notice", "name: m", "name: m\ninterruptionNotice: -1m", "interruptionNotice: must not be negative, got -1m0s"},
		{"bad scoring", "name: m", "name: m\nscheduler: {scoring: Balanced}", `scheduler.scoring: must be LeastAllocated or MostAllocated, got "Balanced"`},
		{"no duration", "duration: 10m", "duration: 0s", "workloads[0].jobs[0].duration: must be positive, got 0s"},
		{"bad expander", "name: m", "name: m\nautoscaler: {expander: cheapest}", "autoscaler:"},
		{"unknown autoscaler flag", "name: m", "name: m\nautoscaler: {scale-down-time: 5m}", `--scale-down-time: not a decision flag`},
		{"missing memory", "memory: 16Gi", "pods: 10", "nodeGroups[0].capacity.memory: must be positive"},
		// A real cluster takes GPUs and other extended resources in units.
		{"half a GPU requested", `requests: {cpu: "1"}`, `requests: {cpu: "1", nvidia.com/gpu: "0.5"}`,
			`workloads[0].pod.requests.nvidia.com/gpu: must be a whole number (nvidia.com/gpu is counted in units), got "500m"`},
		{"fractional extended resource", `requests: {cpu: "1"}`, `requests: {cpu: "1", example.com/fpga: 1500m}`,
			`workloads[0].pod.requests.example.com/fpga: must be a whole number`},
		{"half a GPU per node", "memory: 16Gi}", `memory: 16Gi, nvidia.com/gpu: "0.5"}`,
			`nodeGroups[0].capacity.nvidia.com/gpu: must be a whole number (nvidia.com/gpu is counted in units), got "500m"`},
		// What the cluster model refuses is refused at parse, not once the run starts.
		{"toleration with neither key nor operator", `requests: {cpu: "1"}`, `requests: {cpu: "1"}, tolerations: [{}]`,
			`workloads[0].pod: pod default/w: spec.tolerations[0].operator: an empty key needs operator Exists`},
		{"taint without an effect", "memory: 16Gi}", "memory: 16Gi}\n  taints: [{key: gpu}]", "nodeGroups[0]:"},
		{"capacity block ending at the start", "maxSize: 3", "maxSize: 3\n  capacityBlockEnd: 0s", "nodeGroups[0].capacityBlockEnd: must be positive (a time after the start), got 0s"},
		{"queue delay without a queue", "maxSize: 3", "maxSize: 3\n  queuedDelay: 5m", "nodeGroups[0].queuedDelay: applies to queuedProvisioning groups only, got 5m0s"},
		{"negative queue delay", "maxSize: 3", "maxSize: 3\n  queuedProvisioning: true\n  queuedDelay: -5m", "nodeGroups[0].queuedDelay: must not be negative, got -5m0s"},
		{"unknown request class", "jobs: [{at: 1m, duration: 10m}]", "provisioningClass: fast\n  jobs: [{at: 1m, count: 2, gang: 2, duration: 1h}]",
			`workloads[0].provisioningClass: want best-effort-atomic-scale-up.autoscaling.x-k8s.io or queued-provisioning.gke.io, got "fast"`},
		{"request class without gangs", "name: w", "name: w\n  provisioningClass: queued-provisioning.gke.io",
			"workloads[0].provisioningClass: applies to jobs of several pods (gang > 1) only"},
		{"run duration of another class", "jobs: [{at: 1m, duration: 10m}]", "maxRunDuration: 1h\n  jobs: [{at: 1m, count: 2, gang: 2, duration: 1h}]",
			"workloads[0].maxRunDuration: applies to provisioningClass queued-provisioning.gke.io only, got 1h0m0s"},
		{"run duration too long", "jobs: [{at: 1m, duration: 10m}]", "provisioningClass: queued-provisioning.gke.io\n  maxRunDuration: 200h\n  jobs: [{at: 1m, count: 2, gang: 2, duration: 1h}]",
			"workloads[0].maxRunDuration: must be from 1s to 168h0m0s, got 200h0m0s"},
		{"negative capacity", "memory: 16Gi}", `memory: 16Gi, nvidia.com/gpu: "-1"}`, `nodeGroups[0].capacity.nvidia.com/gpu: must not be negative, got "-1"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(minimal, c.from, c.to, 1)
			if text == minimal {
				t.Fatalf("test edit %q not applied", c.from)
			}
			_, err := Parse([]byte(text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestHPAValidation(t *testing.T) {
	text := strings.Replace(builtinText(t, "seed-walkthrough"), "type: AverageValue", "type: Utilization", 1)
	_, err := Parse([]byte(text))
	if err == nil || !strings.Contains(err.Error(), "workloads[0].deployment.hpa.metrics[0].pods.target: must be a positive AverageValue") {
		t.Fatalf("error %v, want the HPA target named", err)
	}
}

func builtinText(t *testing.T, name string) string {
	t.Helper()
	data, err := BuiltinYAML(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Every built-in scenario parses, and the copies in examples/sim are the
// same text, so the documented examples are the ones that run.
func TestBuiltinsAndExamples(t *testing.T) {
	for _, name := range Builtins() {
		if _, err := Builtin(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if name == SyntheticDayName {
			continue
		}
		example, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "sim", name+".yaml"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if string(example) != builtinText(t, name) {
			t.Errorf("examples/sim/%s.yaml differs from the built-in scenario", name)
		}
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "examples", "sim", "*.yaml"))
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%v", err)
		}
	}
	if _, err := Builtin("nope"); err == nil || !strings.Contains(err.Error(), "seed-walkthrough") {
		t.Errorf("unknown built-in: %v, want the known ones listed", err)
	}
}

func TestSyntheticDaySize(t *testing.T) {
	s := SyntheticDay()
	peakPods, maxNodes := 0, 0
	for _, w := range s.Workloads {
		if d := w.Deployment; d != nil {
			peakPods += int(d.HPA.MaxReplicas)
		} else {
			peakPods += w.PodCount() / 10 // ten hourly batches, each running 90m
		}
	}
	for _, g := range s.NodeGroups {
		maxNodes += g.MaxSize
	}
	if peakPods < 30000 || maxNodes < 1000 {
		t.Errorf("synthetic day: at most %d pods at once on up to %d nodes; want about 30,000 on 1,000", peakPods, maxNodes)
	}
}

// A scenario's autoscaler section takes every decision flag of
// cluster-autoscaler, including those a hand-written list once left out,
// and --set and --compare settings apply over it in order.
func TestScenarioSettings(t *testing.T) {
	sc, err := Parse([]byte(`name: m
seed: 3
autoscaler:
  expander: price
  scale-down-unneeded-time: 5m
  cores-total: "0:1000000"
  gpu-total: ["nvidia-a10g:0:64", "nvidia-l4:0:8"]
  skip-nodes-with-system-pods: false
  expendable-pods-priority-cutoff: -5
  max-nodes-total: 1000000
nodeGroups:
- {name: g, maxSize: 1, pricePerHour: 1, capacity: {cpu: "4", memory: 8Gi}}
workloads:
- {name: w, pod: {requests: {cpu: "1"}}, jobs: [{at: 0s, duration: 1m}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	set, err := autoscalerflags.ParseSettings("expander=least-waste,--scan-interval=30s")
	if err != nil {
		t.Fatal(err)
	}
	d, err := sc.Decision(set)
	if err != nil {
		t.Fatal(err)
	}
	o := d.Autoscaler
	if o.ScaleUp.Expander != "least-waste" || o.ScaleDown.UnneededTime != 5*time.Minute || o.Limits.Cores.Max != 1000000 ||
		len(o.Limits.GPUs) != 2 || o.ScaleDown.SkipNodesWithSystemPods || o.ExpendablePodsPriorityCutoff != -5 ||
		o.Limits.MaxNodesTotal != 1000000 || o.ScaleUp.Seed != 3 || d.ScanInterval != 30*time.Second {
		t.Errorf("decision %+v, scan %s", o, d.ScanInterval)
	}
	for _, bad := range []string{"scale-down-unneded-time=5m", "max-nodes-total=many", "cores-total=9"} {
		set, err := autoscalerflags.ParseSettings(bad)
		if err == nil {
			_, err = sc.Decision(set)
		}
		if err == nil || !strings.Contains(err.Error(), "--"+strings.Split(bad, "=")[0]) {
			t.Errorf("%q: %v, want an error naming the flag", bad, err)
		}
	}
}

func TestLoadRefusesAFileOverTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(path, []byte(minimal+strings.Repeat("#", 16<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "over the 16 MiB limit") {
		t.Errorf("a scenario over 16 MiB: %v; want it refused naming the file and the limit", err)
	}
}

// Sizes that would hold more nodes, pods or samples than a machine has are
// refused with the field, the value and the limit, before the run starts.
func TestScenarioLimits(t *testing.T) {
	for _, c := range []struct {
		name, from, to, want string
	}{
		{"a hundred million pods in one batch", "jobs: [{at: 1m, duration: 10m}]", "jobs: [{at: 1m, duration: 10m, count: 100000000}]",
			"workloads[0].jobs[0].count: must be at most 100000 (the simulator holds every pod in memory), got 100000000"},
		{"a hundred million nodes", "maxSize: 3", "maxSize: 100000000\n  minSize: 100000000",
			"nodeGroups[0].maxSize: must be at most 100000 (the simulator holds every node in memory), got 100000000"},
		{"a sample every nanosecond", "name: m", "name: m\nsampleInterval: 1ns", "sampleInterval: must be at least 1s, got 1ns"},
		{"a sample every second for a century", "name: m", "name: m\nduration: 876000h\nsampleInterval: 1s",
			"sampleInterval: 1s over a duration of 876000h0m0s is 3153600000 samples, over the 10000000 limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(minimal, c.from, c.to, 1)
			if text == minimal {
				t.Fatalf("test edit %q not applied", c.from)
			}
			_, err := Parse([]byte(text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
	walk := builtinText(t, "seed-walkthrough")
	for field, want := range map[string]string{
		"replicas":    "workloads[0].deployment.replicas: must be at most 100000",
		"maxReplicas": "workloads[0].deployment.hpa.maxReplicas: must be at most 100000",
	} {
		text := regexp.MustCompile(`(?m)^(\s+`+field+`:) \d+`).ReplaceAllString(walk, "$1 2000000000")
		if text == walk {
			t.Fatalf("%s not found in seed-walkthrough", field)
		}
		if _, err := Parse([]byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: 2000000000: %v, want %q", field, err, want)
		}
	}
}
