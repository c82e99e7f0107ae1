package gce

import (
	"math"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzParseConfig: the GCE --cloud-config reader never panics, and what it
// accepts validates again and holds only usable prices.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"project: gpu-project\nzones: [us-central1-a, us-central1-b]\nclusterName: prod\nrefreshInterval: 30s\nprices:\n  machineTypes:\n    a3-highgpu-8g: {onDemand: 88.25, spot: 26.5}\n",
		"", "null", "zones: [moon]\n", "refreshInterval: -1s\n", "prices: {accelerators: {nvidia-l4: {onDemand: .nan}}}\n",
		"prices: {machineTypes: {x: {spot: .inf}}}\n", "project: example.com:my-project\n", "projct: x\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted, then invalid: %v", err)
		}
		for _, m := range []map[string]Price{c.Prices.MachineTypes, c.Prices.Accelerators} {
			for name, p := range m {
				for _, v := range []float64{p.OnDemand, p.Spot} {
					if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
						t.Fatalf("accepted price %s: %+v from %q", name, p, data)
					}
				}
			}
		}
	})
}

// FuzzParseKubeEnv: kube-env from an instance template never panics the
// reader, and what it accepts is a valid node template: label keys and
// values, taint keys and effects.
func FuzzParseKubeEnv(f *testing.F) {
	for _, seed := range []string{
		gpuKubeEnv,
		"NODE_LABELS: ignored=yes\nAUTOSCALER_ENV_VARS: node_labels=a=1,b=2;node_taints=dedicated:NoExecute;kube_reserved=cpu=1060m,memory=1019Mi;os=linux\n",
		"NODE_LABELS: a=1,novalue\n", "NODE_TAINTS: gpu=yes:Sometimes\n", "NODE_TAINTS: [a, b]\n", "- not a map\n",
		"AUTOSCALER_ENV_VARS: ;;=x\n", "AUTOSCALER_ENV_VARS: kube_reserved=cpu=-1\n", "", "{}", "NODE_LABELS: ''\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		env, err := parseKubeEnv(data)
		if err != nil {
			return
		}
		for k, v := range env.Labels {
			if len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
				t.Fatalf("accepted label %q=%q from %q", k, v, data)
			}
		}
		for _, taint := range env.Taints {
			if len(validation.IsQualifiedName(taint.Key)) > 0 {
				t.Fatalf("accepted taint key %q from %q", taint.Key, data)
			}
			switch taint.Effect {
			case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
			default:
				t.Fatalf("accepted taint effect %q from %q", taint.Effect, data)
			}
		}
	})
}

// FuzzParseMIGURL: what the --nodes URL reader accepts comes back
// unchanged from its canonical URL, so a group has one id.
func FuzzParseMIGURL(f *testing.F) {
	for _, seed := range []string{
		"https://www.googleapis.com/compute/v1/projects/proj-one/zones/us-central1-a/instanceGroups/gpu-mig",
		"https://compute.googleapis.com/compute/v1/projects/p-123456/zones/europe-west4-b/instanceGroupManagers/x",
		"projects/example.com:proj-one/zones/us-central1-a/instanceGroups/a",
		"projects/p/regions/us-central1/instanceGroups/x", "gpu-mig", "", "https://www.googleapis.com/x",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ref, err := ParseMIGURL(raw)
		if err != nil {
			return
		}
		again, err := ParseMIGURL(ref.URL())
		if err != nil || again != ref {
			t.Fatalf("%q parsed to %+v, whose URL %q parses to %+v, %v", raw, ref, ref.URL(), again, err)
		}
	})
}
