package kwok

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestParseConfigReadsEveryField(t *testing.T) {
	cfg, err := ParseConfig([]byte(exampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ProvisioningDelay != 30*time.Second || cfg.DevicePluginDelay != 20*time.Second {
		t.Errorf("delays = %s, %s", cfg.ProvisioningDelay, cfg.DevicePluginDelay)
	}
	if len(cfg.NodeGroups) != 2 {
		t.Fatalf("groups = %d", len(cfg.NodeGroups))
	}
	g := cfg.NodeGroups[0]
	if g.Name != "gpu-a10g" || g.MinSize != 0 || g.MaxSize != 10 || g.InstanceType != "g5.xlarge" ||
		g.PricePerHour != 1.006 || g.Spot || g.Zone != "us-east-1a" {
		t.Errorf("group = %+v", g)
	}
	if g.Template.Labels["k8s.amazonaws.com/accelerator"] != "nvidia-a10g" {
		t.Errorf("labels = %v", g.Template.Labels)
	}
	want := v1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: v1.TaintEffectNoSchedule}
	if len(g.Template.Taints) != 1 || g.Template.Taints[0] != want {
		t.Errorf("taints = %v", g.Template.Taints)
	}
	for name, qty := range map[v1.ResourceName]string{"cpu": "4", "memory": "16Gi", "pods": "110", "nvidia.com/gpu": "1"} {
		if q := g.Template.Capacity[name]; q.Cmp(resource.MustParse(qty)) != 0 {
			t.Errorf("capacity %s = %s, want %s", name, q.String(), qty)
		}
	}
	// Bare YAML numbers are quantities too.
	if q := cfg.NodeGroups[1].Template.Capacity[v1.ResourceCPU]; q.Value() != 8 {
		t.Errorf("cpu: 8 parsed as %s", q.String())
	}
}

func TestParseConfigDelaysDefaultToZero(t *testing.T) {
	cfg, err := ParseConfig([]byte("nodeGroups: [{name: a, maxSize: 1, template: {capacity: {cpu: 1, memory: 1Gi}}}]"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ProvisioningDelay != 0 || cfg.DevicePluginDelay != 0 {
		t.Errorf("delays = %s, %s", cfg.ProvisioningDelay, cfg.DevicePluginDelay)
	}
}

// oneGroup returns a one-group configuration with the group's body replaced;
// each line of body is indented under the list item.
func oneGroup(body string) string {
	return "nodeGroups:\n- " + strings.ReplaceAll(strings.TrimSpace(body), "\n", "\n  ") + "\n"
}

const okCapacity = "template: {capacity: {cpu: 1, memory: 1Gi}}"

func TestParseConfigRefusesAndNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown field in a template",
			"nodeGroups:\n- {name: a, maxSize: 1, " + okCapacity + "}\n- name: b\n  maxSize: 1\n  template:\n    gpus: 1\n    capacity: {cpu: 1, memory: 1Gi}\n",
			`nodeGroups[1].template: unknown field "gpus"`},
		{"unknown field in a taint",
			oneGroup("name: a\nmaxSize: 1\ntemplate:\n  taints: [{key: k, effect: NoSchedule, operator: Exists}]\n  capacity: {cpu: 1, memory: 1Gi}"),
			`nodeGroups[0].template.taints[0]: unknown field "operator"`},
		{"unknown top-level field", "nodegroups: []\n", `kwok config: unknown field "nodegroups"`},
		{"field names are case-sensitive", oneGroup("name: a\nMaxSize: 1\n" + okCapacity), `nodeGroups[0]: unknown field "MaxSize"`},
		{"duplicate key", oneGroup("name: a\nname: b\nmaxSize: 1\n" + okCapacity), `key "name" already set`},
		{"min above max", oneGroup("name: pool\nminSize: 3\nmaxSize: 1\n" + okCapacity), `nodeGroups[0].minSize: 3 is above maxSize 1`},
		{"negative min", oneGroup("name: a\nminSize: -1\nmaxSize: 1\n" + okCapacity), `nodeGroups[0].minSize: must not be negative, got -1`},
		{"negative max", oneGroup("name: a\nmaxSize: -2\n" + okCapacity), `nodeGroups[0].maxSize: must not be negative, got -2`},
		{"max missing", oneGroup("name: a\n" + okCapacity), `nodeGroups[0].maxSize: required`},
		{"size not a number", oneGroup("name: a\nmaxSize: three\n" + okCapacity), `nodeGroups[0].maxSize: want a whole number, got "three"`},
		{"size not whole", oneGroup("name: a\nmaxSize: 1.5\n" + okCapacity), `nodeGroups[0].maxSize: want a whole number, got 1.5`},
		{"duplicate names",
			"nodeGroups:\n- {name: a, maxSize: 1, " + okCapacity + "}\n- {name: a, maxSize: 2, " + okCapacity + "}\n",
			`nodeGroups[1].name: duplicate "a" (also nodeGroups[0])`},
		{"name missing", oneGroup("maxSize: 1\n" + okCapacity), `nodeGroups[0].name: required`},
		{"name not a DNS label", oneGroup("name: GPU_pool\nmaxSize: 1\n" + okCapacity), `nodeGroups[0].name: "GPU_pool" is not a DNS label`},
		{"bad quantity", oneGroup("name: a\nmaxSize: 1\ntemplate: {capacity: {cpu: 1, memory: 16GB}}"),
			`nodeGroups[0].template.capacity["memory"]: bad quantity "16GB"`},
		{"quantity not a scalar", oneGroup("name: a\nmaxSize: 1\ntemplate: {capacity: {cpu: [1], memory: 1Gi}}"),
			`nodeGroups[0].template.capacity["cpu"]: want a quantity such as "4" or "16Gi", got [1]`},
		{"negative quantity", oneGroup("name: a\nmaxSize: 1\ntemplate: {capacity: {cpu: -1, memory: 1Gi}}"),
			`nodeGroups[0].template.capacity["cpu"]: must not be negative, got -1`},
		{"fractional GPUs", oneGroup("name: a\nmaxSize: 1\ntemplate: {capacity: {cpu: 1, memory: 1Gi, nvidia.com/gpu: 500m}}"),
			`nodeGroups[0].template.capacity["nvidia.com/gpu"]: must be a whole number, got 500m`},
		{"cpu missing", oneGroup("name: a\nmaxSize: 1\ntemplate: {capacity: {memory: 1Gi}}"),
			`nodeGroups[0].template.capacity: cpu is required`},
		{"capacity missing", oneGroup("name: a\nmaxSize: 1\ntemplate: {labels: {a: b}}"), `nodeGroups[0].template.capacity: required`},
		{"template missing", oneGroup("name: a\nmaxSize: 1"), `nodeGroups[0].template: required`},
		{"bad duration", "provisioningDelay: 30\n" + oneGroup("name: a\nmaxSize: 1\n"+okCapacity),
			`provisioningDelay: want a duration such as "30s" or "2m", got 30`},
		{"negative duration", "devicePluginDelay: -5s\n" + oneGroup("name: a\nmaxSize: 1\n"+okCapacity),
			`devicePluginDelay: must not be negative, got -5s`},
		{"unquoted boolean label", oneGroup("name: a\nmaxSize: 1\ntemplate: {labels: {nvidia.com/gpu.present: true}, capacity: {cpu: 1, memory: 1Gi}}"),
			`nodeGroups[0].template.labels["nvidia.com/gpu.present"]: want a string, got true (quote it)`},
		{"label set by the provider", oneGroup("name: a\nmaxSize: 1\ntemplate: {labels: {topology.kubernetes.io/zone: z}, capacity: {cpu: 1, memory: 1Gi}}"),
			`nodeGroups[0].template.labels["topology.kubernetes.io/zone"]: set by the provider from zone`},
		{"bad label value", oneGroup("name: a\nmaxSize: 1\nzone: 'us east'\n" + okCapacity), `nodeGroups[0].zone: "us east" is not a valid label value`},
		{"bad taint effect", oneGroup("name: a\nmaxSize: 1\ntemplate: {taints: [{key: k, effect: NoScheduled}], capacity: {cpu: 1, memory: 1Gi}}"),
			`nodeGroups[0].template.taints[0].effect: want NoSchedule, PreferNoSchedule or NoExecute, got "NoScheduled"`},
		{"taint without key", oneGroup("name: a\nmaxSize: 1\ntemplate: {taints: [{effect: NoSchedule}], capacity: {cpu: 1, memory: 1Gi}}"),
			`nodeGroups[0].template.taints[0].key: required`},
		{"negative price", oneGroup("name: a\nmaxSize: 1\npricePerHour: -1\n" + okCapacity), `nodeGroups[0].pricePerHour: must be a non-negative number, got -1`},
		{"spot not a boolean", oneGroup("name: a\nmaxSize: 1\nspot: yes-please\n" + okCapacity), `nodeGroups[0].spot: want true or false, got "yes-please"`},
		{"nodeGroups not a list", "nodeGroups: {name: a}\n", `nodeGroups: want a list, got map`},
		{"a group not a map", "nodeGroups: [a]\n", `nodeGroups[0]: want a map, got string`},
		{"no groups", "provisioningDelay: 1s\n", `nodeGroups: must list at least one node group`},
		{"empty", "", `kwok config: empty`},
		{"not YAML", "nodeGroups: [", `kwok config: yaml: line 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.yaml)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("error is %T, want *ConfigError", err)
			}
		})
	}
}

func TestParseConfigReportsEveryProblem(t *testing.T) {
	_, err := ParseConfig([]byte(oneGroup("name: a\nminSize: 4\nmaxSize: 2\npricePerHour: -1\n" + okCapacity)))
	var ce *ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) != 2 {
		t.Fatalf("want 2 problems, got %v", err)
	}
}

func TestLoadConfigFileNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kwok.yaml")
	if err := os.WriteFile(path, []byte(oneGroup("name: a\nmaxSize: x\n"+okCapacity)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfigFile(path)
	if err == nil || !strings.Contains(err.Error(), path+": kwok config: nodeGroups[0].maxSize") {
		t.Errorf("err = %v", err)
	}
	if _, err := LoadConfigFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing file was accepted")
	}
}

func TestLoadConfigReadsTheConfigMapWithoutAFile(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: testNamespace},
		Data:       map[string]string{ConfigMapKey: exampleConfig},
	})
	cfg, err := LoadConfig(ctx, client, testNamespace, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.NodeGroups) != 2 {
		t.Errorf("groups = %d", len(cfg.NodeGroups))
	}
	if _, err := LoadConfig(ctx, fake.NewClientset(), testNamespace, ""); err == nil ||
		!strings.Contains(err.Error(), ConfigMapName) {
		t.Errorf("missing ConfigMap: err = %v", err)
	}
}

// The example the README runs must stay valid.
func TestExampleConfigParses(t *testing.T) {
	cfg, err := LoadConfigFile("../../../examples/kwok-gpu.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.NodeGroups) != 2 {
		t.Errorf("example has %d node groups, want 2", len(cfg.NodeGroups))
	}
}

func TestAcceleratorsExampleParses(t *testing.T) {
	cfg, err := LoadConfigFile("../../../examples/kwok-accelerators.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.NodeGroups) != 6 || len(cfg.NodeGroups[3].Template.Devices) != 1 {
		t.Errorf("example: %d node groups, DRA group devices %v", len(cfg.NodeGroups), cfg.NodeGroups[3].Template.Devices)
	}
}

func TestLoadConfigFileRefusesAFileOverTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(path, []byte(strings.Repeat("#", 4<<20+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfigFile(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "over the 4 MiB limit") {
		t.Errorf("a 4 MiB + 1 file: %v; want it refused naming the file and the limit", err)
	}
}
