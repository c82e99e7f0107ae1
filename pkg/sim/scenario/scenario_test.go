package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		{"bad scoring", "name: m", "name: m\nscheduler: {scoring: Balanced}", `scheduler.scoring: must be LeastAllocated or MostAllocated, got "Balanced"`},
		{"no duration", "duration: 10m", "duration: 0s", "workloads[0].jobs[0].duration: must be positive, got 0s"},
		{"bad expander", "name: m", "name: m\nautoscaler: {expander: cheapest}", "autoscaler:"},
		{"unknown autoscaler flag", "name: m", "name: m\nautoscaler: {scale-down-time: 5m}", `unknown field "autoscaler.scale-down-time"`},
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

func TestFlagSets(t *testing.T) {
	f, err := ParseFlagSet("expander=price, --scale-down-unneeded-time=5m,balance-similar-node-groups=true,max-nodes-total=40")
	if err != nil {
		t.Fatal(err)
	}
	o, scan := f.Options(3)
	if o.ScaleUp.Expander != "price" || o.ScaleDown.UnneededTime != 5*time.Minute || !o.ScaleUp.BalanceSimilarNodeGroups ||
		o.Limits.MaxNodesTotal != 40 || o.ScaleUp.Seed != 3 || scan != DefaultScanInterval {
		t.Errorf("options %+v, scan %s", o, scan)
	}
	if got := f.Label(); got != "balance-similar-node-groups=true,expander=price,max-nodes-total=40,scale-down-unneeded-time=5m0s" {
		t.Errorf("label %q", got)
	}
	merged := f.Merge(mustFlags(t, "expander=least-waste"))
	if *merged.Expander != "least-waste" || merged.ScaleDownUnneededTime.Duration != 5*time.Minute {
		t.Errorf("merge kept %+v", merged)
	}
	for _, bad := range []string{"expander", "scale-down-unneded-time=5m", "max-nodes-total=many"} {
		if _, err := ParseFlagSet(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func mustFlags(t *testing.T, s string) AutoscalerFlags {
	t.Helper()
	f, err := ParseFlagSet(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
