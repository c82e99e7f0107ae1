package gce

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseMIGURL(t *testing.T) {
	want := MIGRef{Project: "gpu-project", Zone: "us-central1-a", Name: "gke-prod-gpu-1a2b3c4d-grp"}
	for _, in := range []string{
		"https://www.googleapis.com/compute/v1/projects/gpu-project/zones/us-central1-a/instanceGroups/gke-prod-gpu-1a2b3c4d-grp",
		"https://compute.googleapis.com/compute/v1/projects/gpu-project/zones/us-central1-a/instanceGroupManagers/gke-prod-gpu-1a2b3c4d-grp",
		"projects/gpu-project/zones/us-central1-a/instanceGroups/gke-prod-gpu-1a2b3c4d-grp",
	} {
		got, err := ParseMIGURL(in)
		if err != nil || got != want {
			t.Errorf("ParseMIGURL(%q) = %+v, %v", in, got, err)
		}
	}
	if want.URL() != "https://www.googleapis.com/compute/v1/projects/gpu-project/zones/us-central1-a/instanceGroups/gke-prod-gpu-1a2b3c4d-grp" {
		t.Errorf("URL: %s", want.URL())
	}
	bad := map[string]string{
		"gke-pool": "want https://www.googleapis.com/compute/v1/projects/PROJECT/zones/ZONE/instanceGroups/NAME",
		"https://www.googleapis.com/compute/beta/projects/p/zones/z/instanceGroups/n": "want /compute/v1/ after the host",
		"projects/gpu-project/regions/us-central1/instanceGroups/x":                   "regional instance groups are not supported",
		"projects/gpu-project/zones/uscentral/instanceGroups/x":                       `zone "uscentral"`,
		"projects/gpu-project/zones/us-central1-a/instanceGroups/Bad_Name":            `name "Bad_Name"`,
		"projects/P/zones/us-central1-a/instanceGroups/x":                             `project "P"`,
	}
	for in, want := range bad {
		_, err := ParseMIGURL(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), in) {
			t.Errorf("ParseMIGURL(%q): got %v, want it to name the input and say %q", in, err, want)
		}
	}
}

func TestProviderIDs(t *testing.T) {
	ref, err := ParseProviderID("gce://gpu-project/us-central1-a/gke-prod-gpu-1a2b3c4d-x7k2")
	if err != nil || ref != (InstanceRef{"gpu-project", "us-central1-a", "gke-prod-gpu-1a2b3c4d-x7k2"}) {
		t.Fatalf("got %+v, %v", ref, err)
	}
	if ref.ProviderID() != "gce://gpu-project/us-central1-a/gke-prod-gpu-1a2b3c4d-x7k2" {
		t.Errorf("round trip: %s", ref.ProviderID())
	}
	for _, bad := range []string{"aws:///us-east-1a/i-1", "gce://p/z", "gce://p//n", "gce://p/z/n/extra"} {
		if _, err := ParseProviderID(bad); err == nil {
			t.Errorf("ParseProviderID(%q) accepted", bad)
		}
	}
	in, err := parseInstanceURL("https://www.googleapis.com/compute/v1/projects/p1/zones/europe-west4-b/instances/vm-1")
	if err != nil || in != (InstanceRef{"p1", "europe-west4-b", "vm-1"}) {
		t.Errorf("parseInstanceURL: %+v, %v", in, err)
	}
}

func TestGKENodePoolName(t *testing.T) {
	cases := []struct{ group, cluster, want string }{
		{"gke-prod-gpu-pool-1a2b3c4d-grp", "prod", "gpu-pool"},
		{"gke-my-cluster-default-pool-0f1e2d3c-grp", "my-cluster", "default-pool"},
		{"gke-prod-gpu-pool-1a2b3c4d-grp", "", ""},
		{"gke-prod-gpu-pool-1a2b3c4d-grp", "staging", ""},
		{"workers", "prod", ""},
		{"gke-prod-gpu-pool", "prod", ""},
	}
	for _, c := range cases {
		if got := gkeNodePoolName(c.group, c.cluster); got != c.want {
			t.Errorf("gkeNodePoolName(%q, %q) = %q, want %q", c.group, c.cluster, got, c.want)
		}
	}
}

func TestParseKubeEnv(t *testing.T) {
	env, err := parseKubeEnv(gpuKubeEnv)
	if err != nil {
		t.Fatal(err)
	}
	if env.Labels["cloud.google.com/gke-nodepool"] != "gpu-pool" || len(env.Labels) != 2 {
		t.Errorf("labels: %v", env.Labels)
	}
	if len(env.Taints) != 1 || env.Taints[0] != (v1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: v1.TaintEffectNoSchedule}) {
		t.Errorf("taints: %v", env.Taints)
	}
	// AUTOSCALER_ENV_VARS wins over NODE_LABELS and carries the reservation.
	env, err = parseKubeEnv(`NODE_LABELS: ignored=yes
AUTOSCALER_ENV_VARS: node_labels=a=1,b=2;node_taints=dedicated:NoExecute;kube_reserved=cpu=1060m,memory=1019Mi;os=linux
`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Labels["a"] != "1" || env.Labels["b"] != "2" || env.Labels["ignored"] != "" {
		t.Errorf("labels: %v", env.Labels)
	}
	if len(env.Taints) != 1 || env.Taints[0].Key != "dedicated" || env.Taints[0].Value != "" || env.Taints[0].Effect != v1.TaintEffectNoExecute {
		t.Errorf("taints: %v", env.Taints)
	}
	if q := env.Reserved[v1.ResourceCPU]; q.Cmp(resource.MustParse("1060m")) != 0 {
		t.Errorf("reserved cpu: %s", q.String())
	}
}

func TestParseKubeEnvNamesTheBadItem(t *testing.T) {
	cases := map[string]string{
		"NODE_LABELS: a=1,novalue\n":                    `kube-env NODE_LABELS: item 2 "novalue": want key=value`,
		"NODE_LABELS: a=1,bad key=x\n":                  `kube-env NODE_LABELS: item 2 "bad key=x": key "bad key"`,
		"NODE_LABELS: a=1,a=2\n":                        `label a given twice`,
		"NODE_TAINTS: gpu=yes\n":                        `kube-env NODE_TAINTS: item 1 "gpu=yes": want key[=value]:Effect`,
		"NODE_TAINTS: gpu=yes:Sometimes\n":              `effect "Sometimes" is not NoSchedule`,
		"NODE_TAINTS: [a, b]\n":                         "kube-env NODE_TAINTS: want a string",
		"AUTOSCALER_ENV_VARS: node_labels;x=1\n":        `AUTOSCALER_ENV_VARS: item 1 "node_labels"`,
		"AUTOSCALER_ENV_VARS: kube_reserved=cpu=lots\n": `kube_reserved: item 1 "cpu=lots"`,
		"- not a map\n":                                 "kube-env: not a YAML map",
	}
	for in, want := range cases {
		_, err := parseKubeEnv(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseKubeEnv(%q): got %v, want %q", in, err, want)
		}
	}
}

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`project: gpu-project
zones: [us-central1-a, us-central1-b]
clusterName: prod
refreshInterval: 30s
callTimeout: 20s
prices:
  machineTypes:
    a3-highgpu-8g: {onDemand: 88.25, spot: 26.5}
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Project != "gpu-project" || len(cfg.Zones) != 2 || cfg.RefreshInterval.Duration.Seconds() != 30 || cfg.CallTimeout.Duration.Seconds() != 20 ||
		cfg.Prices.MachineTypes["a3-highgpu-8g"].Spot != 26.5 {
		t.Errorf("config: %+v", cfg)
	}
	// The Helm chart's example (deploy/charts/gpuscale/values-gce.yaml).
	if _, err := ParseConfig([]byte("project: my-project\nzones: [us-central1-a, us-central1-b, us-central1-f]\nclusterName: my-cluster\n")); err != nil {
		t.Errorf("chart example: %v", err)
	}
	bad := map[string]string{
		"projct: x\n":                                           `unknown field "projct"`,
		"Project: x\n":                                          `unknown field "Project"`,
		"zones: [us-central1-a, moon]\n":                        `zones[1]: "moon" is not a zone name`,
		"zones: [us-central1-a, us-central1-a]\n":               `zones[1]: "us-central1-a" is listed twice`,
		"refreshInterval: -1s\n":                                "refreshInterval: must not be negative",
		"callTimeout: -1s\n":                                    "callTimeout: must not be negative, got -1s",
		"prices: {accelerators: {nvidia-l4: {onDemand: -1}}}\n": "prices.accelerators.nvidia-l4: prices must not be negative",
		// A value the field's own decoder refuses, and a NaN, name the field.
		"refreshInterval: 1000000000h\n":                          `refreshInterval: time: invalid duration "1000000000h"`,
		"prices: {accelerators: {nvidia-l4: {onDemand: .nan}}}\n": "prices.accelerators.nvidia-l4.onDemand: line 1: .nan is not a number",
	}
	for in, want := range bad {
		if _, err := ParseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfig(%q): got %v, want %q", in, err, want)
		}
	}
}

func TestMachineTypeTable(t *testing.T) {
	if len(builtinMachineTypes) < 100 {
		t.Fatalf("table has %d types", len(builtinMachineTypes))
	}
	for name, mt := range builtinMachineTypes {
		if mt.VCPUs <= 0 || mt.MemoryMiB <= 0 || (mt.GPUs > 0) != (mt.GPUType != "") {
			t.Errorf("%s: bad shape %+v", name, mt)
		}
		if mt.Price.Spot > mt.Price.OnDemand {
			t.Errorf("%s: spot %g above on-demand %g", name, mt.Price.Spot, mt.Price.OnDemand)
		}
		if _, ok := acceleratorPrices[mt.GPUType]; mt.GPUs > 0 && !ok {
			t.Errorf("%s: GPU type %s has no accelerator price entry", name, mt.GPUType)
		}
	}
	a2 := builtinMachineTypes["a2-highgpu-1g"]
	if a2.VCPUs != 12 || a2.MemoryMiB != 85*1024 || a2.GPUs != 1 || a2.GPUType != "nvidia-tesla-a100" || a2.Price.OnDemand != 3.673385 {
		t.Errorf("a2-highgpu-1g: %+v", a2)
	}
	custom, ok := lookupMachineType("n2-custom-6-24576")
	if !ok || custom.VCPUs != 6 || custom.MemoryMiB != 24576 || custom.Price != (Price{}) {
		t.Errorf("custom type: %+v, %v", custom, ok)
	}
	if _, ok := lookupMachineType("m3-ultramem-32"); ok {
		t.Error("an unlisted type must go to machineTypes.get")
	}
	if _, err := parseMachineTypes(strings.NewReader("a,b,c,d,e,f,g\ne2-x,2,abc,0,,,\n")); err == nil || !strings.Contains(err.Error(), "e2-x") {
		t.Errorf("bad row: %v", err)
	}
}

// A field whose value does not decode does not hide the other problems of
// the file: all are reported at once.
func TestEveryProblemOfTheFileIsReported(t *testing.T) {
	_, err := ParseConfig([]byte("refreshInterval: 1000000000h\nzones: [moon]\nprices: {accelerators: {nvidia-l4: {onDemand: -1}}}\n"))
	for _, want := range []string{`refreshInterval: time: invalid duration "1000000000h"`, `zones[0]: "moon" is not a zone name`,
		"prices.accelerators.nvidia-l4: prices must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfig: got %v, want it to say %q", err, want)
		}
	}
}
