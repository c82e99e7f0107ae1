package chart_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gpuscale/gpuscale/internal/run"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider/gce"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/metricsadapter"
)

const (
	autoscalerName = "gpuscale-cluster-autoscaler"
	adapterName    = "gpuscale-metrics-adapter"
	dcgmSimName    = "gpuscale-dcgm-sim"
)

func TestLint(t *testing.T) {
	for _, values := range valuesFiles {
		t.Run(name(values), func(t *testing.T) {
			args := []string{"lint", "--strict", chartDir, "--namespace", namespace}
			if values != "" {
				args = append(args, "--values", filepath.Join(chartDir, values))
			}
			if out, err := helm(t, args...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

// TestManifestsAreRendered: deploy/manifests holds exactly what
// deploy/render-manifests.sh renders from the chart now.
func TestManifestsAreRendered(t *testing.T) {
	root := repoRoot(t)
	out := t.TempDir()
	if _, err := runScript(t, filepath.Join(root, "deploy", "render-manifests.sh"), out); err != nil {
		t.Fatal(err)
	}
	fresh, _ := filepath.Glob(filepath.Join(out, "*.yaml"))
	committed, _ := filepath.Glob(filepath.Join(root, "deploy", "manifests", "*.yaml"))
	if len(fresh) != 3 || len(committed) != len(fresh) {
		t.Fatalf("want aws.yaml, gce.yaml and kwok.yaml in both, rendered %v, deploy/manifests has %v", fresh, committed)
	}
	for _, f := range fresh {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join(root, "deploy", "manifests", filepath.Base(f)))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("deploy/manifests/%s differs from what the chart renders: run deploy/render-manifests.sh (first difference at line %d)",
				filepath.Base(f), firstDiffLine(string(got), string(want)))
		}
	}
	// The manifests are the chart's output for each values file, not a
	// different rendering.
	for _, p := range []string{"aws", "gce", "kwok"} {
		text, _ := os.ReadFile(filepath.Join(out, p+".yaml"))
		direct, err := helm(t, templateArgs("values-"+p+".yaml")...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(string(text), direct) {
			t.Errorf("%s.yaml is not helm template's output for values-%s.yaml", p, p)
		}
	}
}

// TestRendered checks what each values file renders.
func TestRendered(t *testing.T) {
	for _, values := range valuesFiles {
		t.Run(name(values), func(t *testing.T) {
			objs := render(t, values)
			cfg := checkAutoscaler(t, objs)
			adapter := objs[key("Deployment", namespace, adapterName)] != nil
			if adapter {
				checkAdapter(t, objs)
			}
			checkNamespaces(t, objs)
			checkSecurity(t, objs)

			monitors := len(objs.ofKind("ServiceMonitor")) > 0
			dcgmSim := objs[key("Deployment", namespace, dcgmSimName)] != nil
			shell := cfg.Shell
			// The cloud values leave the metrics adapter off: the cluster
			// may run prometheus-adapter or KEDA, and only one server can
			// own a metrics APIService.
			cloud := values == "values-aws.yaml" || values == "values-gce.yaml"
			if adapter == cloud {
				t.Errorf("metrics adapter rendered: %v; want it off in the AWS and GCE values only", adapter)
			}
			switch values {
			case "":
				if monitors || dcgmSim {
					t.Errorf("defaults render ServiceMonitors (%v) or dcgm-sim (%v); both are opt-in", monitors, dcgmSim)
				}
			case "values-aws.yaml":
				checkAWS(t, objs, cfg, shell)
				checkMonitors(t, objs, autoscalerName)
			case "values-gce.yaml":
				checkGCE(t, objs, cfg, shell)
				checkMonitors(t, objs, autoscalerName)
			case "values-kwok.yaml":
				checkKwok(t, objs, cfg)
				if monitors {
					t.Errorf("kwok values render ServiceMonitors; a test cluster has no Prometheus Operator")
				}
			}
		})
	}
}

// TestMonitorsWithDCGMSim: with both enabled, dcgm-sim's ServiceMonitor
// keeps the exporter's namespace and pod labels apart from the target's
// (honorLabels false), so they arrive as exported_namespace/exported_pod
// as the adapter rules expect.
func TestMonitorsWithDCGMSim(t *testing.T) {
	objs := render(t, "values-kwok.yaml", "--set", "serviceMonitor.enabled=true")
	checkMonitors(t, objs, autoscalerName, adapterName, dcgmSimName)
	sm := objs[key("ServiceMonitor", namespace, dcgmSimName)]
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if honor, found, _ := unstructured.NestedBool(eps[0].(map[string]any), "honorLabels"); !found || honor {
		t.Errorf("dcgm-sim ServiceMonitor honorLabels = %v (set %v), want false", honor, found)
	}
}

// TestBadValues: values the chart cannot honour stop rendering with the
// value named.
func TestBadValues(t *testing.T) {
	cases := []struct {
		name string
		set  []string
		want string
	}{
		{"unknown provider", []string{"clusterAutoscaler.cloudProvider=azure"}, `at '/clusterAutoscaler/cloudProvider': value must be one of 'aws', 'gce', 'kwok'`},
		{"kwok without groups", []string{"clusterAutoscaler.cloudProvider=kwok"}, "clusterAutoscaler.kwok.config"},
		{"flag the chart sets", []string{"clusterAutoscaler.extraArgs.nodes=1:3:pool"}, "clusterAutoscaler.extraArgs.nodes: set by the chart"},
		{"two cloud configs", []string{"clusterAutoscaler.cloudConfig=/etc/a.yaml", "clusterAutoscaler.cloudConfigContent=region: x"}, "set one, not both"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var args []string
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			out, err := helm(t, templateArgs("", args...)...)
			if err == nil {
				t.Fatalf("rendered with %v, want an error naming %q:\n%.300s", c.set, c.want, out)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %q", err, c.want)
			}
		})
	}
}

func checkAutoscaler(t *testing.T, objs objects) *run.ClusterAutoscalerOptions {
	t.Helper()
	var d appsv1.Deployment
	objs.typed(t, key("Deployment", namespace, autoscalerName), &d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("autoscaler replicas = %v, want 2 (one leads, one waits)", d.Spec.Replicas)
	}
	c := onlyContainer(t, &d)
	if len(c.Args) == 0 || c.Args[0] != "cluster-autoscaler" {
		t.Fatalf("autoscaler args %q do not start with the subcommand cluster-autoscaler", c.Args)
	}
	// The real flag set parses and validates the rendered arguments.
	fs := pflag.NewFlagSet("cluster-autoscaler", pflag.ContinueOnError)
	cfg := run.NewClusterAutoscalerOptions()
	cfg.AddFlags(fs)
	if err := fs.Parse(c.Args[1:]); err != nil {
		t.Fatalf("autoscaler args %q: %v", c.Args[1:], err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("autoscaler args %q: %v", c.Args[1:], err)
	}
	s := cfg.Shell
	if le := s.LeaderElection; !le.Enabled || le.Name != "cluster-autoscaler" || le.Namespace != s.Namespace {
		t.Errorf("leader election: --leader-elect=%v, lease %q in %q; want on, cluster-autoscaler in --namespace",
			le.Enabled, le.Name, le.Namespace)
	}
	if s.Namespace != namespace {
		t.Errorf("--namespace=%q, want the release namespace %q", s.Namespace, namespace)
	}
	if port := addressPort(t, s.Address); containerPort(c, "metrics") != port {
		t.Errorf("--address=%s but container port metrics is %d", s.Address, containerPort(c, "metrics"))
	}
	if got := d.Spec.Template.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"]; got != "false" {
		t.Errorf("autoscaler pods: safe-to-evict annotation %q, want \"false\"", got)
	}
	serviceAccount(t, objs, d.Spec.Template.Spec.ServiceAccountName)
	checkPDB(t, objs, &d, autoscalerName)
	checkServiceSelects(t, objs, autoscalerName, &d)
	return cfg
}

func checkAdapter(t *testing.T, objs objects) {
	t.Helper()
	var d appsv1.Deployment
	objs.typed(t, key("Deployment", namespace, adapterName), &d)
	c := onlyContainer(t, &d)
	if len(c.Args) == 0 || c.Args[0] != "metrics-adapter" {
		t.Fatalf("adapter args %q do not start with the subcommand metrics-adapter", c.Args)
	}
	// The adapter's own flag set parses and validates the arguments.
	opts := metricsadapter.NewOptions()
	fs := pflag.NewFlagSet("metrics-adapter", pflag.ContinueOnError)
	opts.AddFlags(fs)
	if err := fs.Parse(c.Args[1:]); err != nil {
		t.Fatalf("adapter args %q: %v", c.Args[1:], err)
	}
	if err := opts.Validate(); err != nil {
		t.Fatalf("adapter args %q: %v", c.Args[1:], err)
	}
	args := flagValues(c.Args[1:])
	if port, _ := strconv.Atoi(args["secure-port"]); port == 0 || containerPort(c, "https") != int32(port) {
		t.Errorf("--secure-port=%q but container port https is %d", args["secure-port"], containerPort(c, "https"))
	}
	if !strings.HasPrefix(opts.PrometheusURL, "http") {
		t.Errorf("--prometheus-url=%q, want an http(s) URL", opts.PrometheusURL)
	}
	checkAdapterConfig(t, objs, &d, opts.ConfigFile)
	serviceAccount(t, objs, d.Spec.Template.Spec.ServiceAccountName)
	checkPDB(t, objs, &d, adapterName)
	svc := checkServiceSelects(t, objs, adapterName, &d)

	for _, api := range []struct{ group, version string }{
		{"custom.metrics.k8s.io", "v1beta1"}, {"custom.metrics.k8s.io", "v1beta2"}, {"external.metrics.k8s.io", "v1beta1"},
	} {
		k := key("APIService", "", api.version+"."+api.group)
		// Registered only with rules for it (TestAPIServicesFollowRules).
		serves := servesAPI(t, objs, d.Name, opts.ConfigFile, api.group)
		if !serves {
			if objs[k] != nil {
				t.Errorf("%s rendered, but the adapter's configuration has no rules for %s", k, api.group)
			}
			continue
		}
		u := objs[k]
		if u == nil {
			t.Errorf("%s not rendered", k)
			continue
		}
		spec := u.Object["spec"].(map[string]any)
		ref := spec["service"].(map[string]any)
		if spec["group"] != api.group || spec["version"] != api.version {
			t.Errorf("%s serves %v/%v", k, spec["group"], spec["version"])
		}
		if ref["name"] != svc.Name || ref["namespace"] != svc.Namespace || !servicePort(svc, ref["port"]) {
			t.Errorf("%s points at %v/%v port %v, want the adapter Service %s/%s", k, ref["namespace"], ref["name"], ref["port"], svc.Namespace, svc.Name)
		}
	}

	sa := d.Spec.Template.Spec.ServiceAccountName
	var crb rbacv1.ClusterRoleBinding
	objs.typed(t, key("ClusterRoleBinding", "", adapterName+":system:auth-delegator"), &crb)
	checkBinding(t, crb.RoleRef, crb.Subjects, "ClusterRole", "system:auth-delegator", sa)
	var rb rbacv1.RoleBinding
	objs.typed(t, key("RoleBinding", "kube-system", adapterName+"-auth-reader"), &rb)
	checkBinding(t, rb.RoleRef, rb.Subjects, "Role", "extension-apiserver-authentication-reader", sa)
}

// mountedFile returns the contents of the file at path in a Deployment's
// container, from the ConfigMap mounted there; it fails when none is.
func mountedFile(t *testing.T, objs objects, deployment, path string) string {
	t.Helper()
	var d appsv1.Deployment
	objs.typed(t, key("Deployment", namespace, deployment), &d)
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		if filepath.Dir(path) != m.MountPath {
			continue
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				var cm v1.ConfigMap
				objs.typed(t, key("ConfigMap", namespace, v.ConfigMap.Name), &cm)
				text, ok := cm.Data[filepath.Base(path)]
				if !ok {
					t.Fatalf("%s: ConfigMap %s mounted at %s has no key %s", deployment, cm.Name, m.MountPath, filepath.Base(path))
				}
				return text
			}
		}
	}
	t.Fatalf("%s: %s is not in a mounted ConfigMap", deployment, path)
	return ""
}

// checkAdapterConfig: --config names a file of a mounted ConfigMap holding
// prometheus-adapter's rules (the seed's rule by default, when there are
// custom rules).
func checkAdapterConfig(t *testing.T, objs objects, d *appsv1.Deployment, path string) {
	t.Helper()
	text := mountedFile(t, objs, d.Name, path)
	// The adapter loads and compiles the file as it would in the pod.
	file := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := metricsadapter.LoadRules(file, "http://prometheus:9090"); err != nil {
		t.Fatalf("adapter --config=%s: %v", path, err)
	}
	var cfg struct {
		Rules []struct {
			SeriesQuery  string              `json:"seriesQuery"`
			MetricsQuery string              `json:"metricsQuery"`
			Name         struct{ As string } `json:"name"`
		} `json:"rules"`
	}
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("adapter --config=%s: %v", path, err)
	}
	if len(cfg.Rules) == 0 {
		return // external rules only (TestAPIServicesFollowRules)
	}
	if cfg.Rules[0].Name.As != "gpu_utilization" ||
		cfg.Rules[0].SeriesQuery != `DCGM_FI_DEV_GPU_UTIL{exported_namespace!="",exported_pod!=""}` ||
		cfg.Rules[0].MetricsQuery != `avg(DCGM_FI_DEV_GPU_UTIL{<<.LabelMatchers>>}) by (<<.GroupBy>>)` {
		t.Errorf("adapter rules are not the seed's gpu_utilization rule: %+v", cfg.Rules)
	}
}

func checkAWS(t *testing.T, objs objects, cfg *run.ClusterAutoscalerOptions, shell run.ShellOptions) {
	t.Helper()
	if shell.CloudProvider != "aws" {
		t.Errorf("--cloud-provider=%s, want aws", shell.CloudProvider)
	}
	// The name the IAM role's trust policy of the EKS guide names.
	sa := serviceAccount(t, objs, "cluster-autoscaler")
	if arn := sa.Annotations["eks.amazonaws.com/role-arn"]; !regexp.MustCompile(`^arn:aws:iam::\d{12}:role/\S+$`).MatchString(arn) {
		t.Errorf("IRSA annotation eks.amazonaws.com/role-arn = %q, want a role ARN", arn)
	}
	if len(shell.AutoDiscovery) != 1 || shell.AutoDiscovery[0].Kind != "asg" {
		t.Fatalf("auto-discovery %+v, want one asg tag discovery", shell.AutoDiscovery)
	}
	tags := shell.AutoDiscovery[0].Tags
	if _, ok := tags["k8s.io/cluster-autoscaler/enabled"]; !ok || len(tags) != 2 {
		t.Errorf("auto-discovery tags %v, want k8s.io/cluster-autoscaler/enabled and k8s.io/cluster-autoscaler/<cluster>", tags)
	}
}

func checkGCE(t *testing.T, objs objects, cfg *run.ClusterAutoscalerOptions, shell run.ShellOptions) {
	t.Helper()
	if exp := cfg.Decision.Decision.Autoscaler.ScaleUp.Expander; shell.CloudProvider != "gce" || exp != "price" {
		t.Errorf("--cloud-provider=%s --expander=%s, want gce and price", shell.CloudProvider, exp)
	}
	gc, err := gce.ParseConfig([]byte(mountedFile(t, objs, autoscalerName, shell.CloudConfig)))
	if err != nil {
		t.Fatalf("--cloud-config=%s: %v", shell.CloudConfig, err)
	}
	if gc.Project == "" || len(gc.Zones) == 0 {
		t.Errorf("GCE cloud config %+v: auto-discovery needs the project and zones", gc)
	}
	sa := serviceAccount(t, objs, autoscalerName)
	if gsa := sa.Annotations["iam.gke.io/gcp-service-account"]; !strings.HasSuffix(gsa, ".iam.gserviceaccount.com") {
		t.Errorf("Workload Identity annotation iam.gke.io/gcp-service-account = %q", gsa)
	}
	if len(shell.AutoDiscovery) == 0 {
		t.Fatal("no mig auto-discovery")
	}
	for _, d := range shell.AutoDiscovery {
		if d.Kind != "mig" || d.NamePrefix == "" {
			t.Errorf("auto-discovery %+v, want mig by name prefix", d)
		}
	}
}

func checkKwok(t *testing.T, objs objects, cfg *run.ClusterAutoscalerOptions) {
	t.Helper()
	if s := cfg.Shell; s.CloudProvider != "kwok" || s.CloudConfig != "" {
		t.Errorf("--cloud-provider=%s --cloud-config=%q, want kwok reading its ConfigMap", s.CloudProvider, s.CloudConfig)
	}
	var cm v1.ConfigMap
	objs.typed(t, key("ConfigMap", namespace, kwok.ConfigMapName), &cm)
	kc, err := kwok.ParseConfig([]byte(cm.Data[kwok.ConfigMapKey]))
	if err != nil {
		t.Fatalf("ConfigMap %s: %v", kwok.ConfigMapName, err)
	}
	gpus := 0
	for _, g := range kc.NodeGroups {
		q := g.Template.Capacity["nvidia.com/gpu"]
		gpus += int(q.Value())
	}
	if gpus == 0 || kc.DevicePluginDelay == 0 {
		t.Errorf("kwok config has no GPU group with a device-plugin delay: %+v", kc)
	}
	var d appsv1.Deployment
	objs.typed(t, key("Deployment", namespace, dcgmSimName), &d)
	c := onlyContainer(t, &d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || len(c.Args) == 0 || c.Args[0] != "dcgm-sim" {
		t.Errorf("dcgm-sim: replicas %v, args %q; want one replica of dcgm-sim", d.Spec.Replicas, c.Args)
	}
	if port := addressPort(t, flagValues(c.Args[1:])["listen-address"]); containerPort(c, "metrics") != port {
		t.Errorf("dcgm-sim --listen-address does not match container port metrics (%d)", containerPort(c, "metrics"))
	}
	serviceAccount(t, objs, d.Spec.Template.Spec.ServiceAccountName)
	checkServiceSelects(t, objs, dcgmSimName, &d)
}
