package chart_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// renderValues renders the chart with a values file written from text.
func renderValues(t *testing.T, text string, extra ...string) objects {
	t.Helper()
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return render(t, "", append([]string{"--values", file}, extra...)...)
}

// templateError renders with a values file written from text and returns
// helm's error, failing the test when it renders.
func templateError(t *testing.T, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := helm(t, templateArgs("", "--values", file)...)
	if err == nil {
		t.Fatalf("rendered, want an error:\n%s\n%.300s", text, out)
	}
	return err.Error()
}

// TestUpstreamValueNames: an upstream cluster-autoscaler chart values file
// renders the same autoscaler (arguments, environment, service account,
// pull secrets) as the same settings under gpuscale's own names.
func TestUpstreamValueNames(t *testing.T) {
	cases := []struct {
		name, ours, upstream string
	}{
		{"aws", `
imagePullSecrets: [{name: regcred}]
clusterAutoscaler:
  nodes: ["0:4:gpu-asg"]
  autoDiscovery: ["asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/my-cluster"]
  env:
  - {name: AWS_REGION, value: us-west-2}
  - {name: HTTPS_PROXY, value: "http://proxy:3128"}
  extraArgs:
    v: 4
    balancing-ignore-label: [topology.ebs.csi.aws.com/zone, eks.amazonaws.com/nodegroup]
    skip-nodes-with-system-pods: false
  serviceAccount:
    name: cluster-autoscaler
    annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::111122223333:role/ca"}
`, `
image:
  pullSecrets: [regcred]
autoDiscovery:
  clusterName: my-cluster
awsRegion: us-west-2
autoscalingGroups:
- {name: gpu-asg, minSize: 0, maxSize: 4}
extraArgs:
  v: 4
  balancing-ignore-label_1: topology.ebs.csi.aws.com/zone
  balancing-ignore-label_2: eks.amazonaws.com/nodegroup
  skip-nodes-with-system-pods: false
extraEnv:
  HTTPS_PROXY: "http://proxy:3128"
rbac:
  serviceAccount:
    name: cluster-autoscaler
    annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::111122223333:role/ca"}
`},
		{"gce", `
clusterAutoscaler:
  cloudProvider: gce
  autoDiscovery: ["mig:namePrefix=gke-my-cluster-gpu,min=0,max=8"]
`, `
clusterAutoscaler:
  cloudProvider: gce
autoscalingGroupsnamePrefix:
- {name: gke-my-cluster-gpu, minSize: 0, maxSize: 8}
`},
		{"existing service account", `
clusterAutoscaler:
  serviceAccount: {create: false, name: irsa-autoscaler}
`, `
rbac:
  serviceAccount: {create: false, name: irsa-autoscaler}
`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ours, theirs := renderValues(t, c.ours), renderValues(t, c.upstream)
			if theirs[key("ServiceAccount", namespace, autoscalerName)] != nil || strings.Contains(c.upstream, "name: cluster-autoscaler") {
				// The real flag set takes the arguments (and the account
				// the pods run as is rendered).
				checkAutoscaler(t, theirs)
			}
			var a, b appsv1.Deployment
			ours.typed(t, key("Deployment", namespace, autoscalerName), &a)
			theirs.typed(t, key("Deployment", namespace, autoscalerName), &b)
			if !reflect.DeepEqual(a.Spec.Template.Spec, b.Spec.Template.Spec) {
				t.Errorf("pod specs differ:\ngpuscale names: args %q env %v sa %s pull %v\nupstream names: args %q env %v sa %s pull %v",
					a.Spec.Template.Spec.Containers[0].Args, a.Spec.Template.Spec.Containers[0].Env, a.Spec.Template.Spec.ServiceAccountName, a.Spec.Template.Spec.ImagePullSecrets,
					b.Spec.Template.Spec.Containers[0].Args, b.Spec.Template.Spec.Containers[0].Env, b.Spec.Template.Spec.ServiceAccountName, b.Spec.Template.Spec.ImagePullSecrets)
			}
			sa := a.Spec.Template.Spec.ServiceAccountName
			if !reflect.DeepEqual(ours[key("ServiceAccount", namespace, sa)], theirs[key("ServiceAccount", namespace, sa)]) {
				t.Errorf("ServiceAccount %s differs:\n%v\n%v", sa, ours[key("ServiceAccount", namespace, sa)], theirs[key("ServiceAccount", namespace, sa)])
			}
			var crb rbacv1.ClusterRoleBinding
			theirs.typed(t, key("ClusterRoleBinding", "", autoscalerName), &crb)
			checkBinding(t, crb.RoleRef, crb.Subjects, "ClusterRole", autoscalerName, sa)
		})
	}
}

// TestUpstreamValuesWin: where an upstream name and gpuscale's set the same
// thing, the upstream one wins (extraArgs over clusterAutoscaler.extraArgs,
// rbac.serviceAccount over clusterAutoscaler.serviceAccount), and both
// lists add up.
func TestUpstreamValuesWin(t *testing.T) {
	objs := renderValues(t, `
extraArgs: {v: 4, expander: price}
autoscalingGroups: [{name: b, minSize: 1, maxSize: 2}]
rbac:
  serviceAccount:
    name: ca
    annotations: {team: platform}
    automountServiceAccountToken: false
clusterAutoscaler:
  nodes: ["0:1:a"]
  serviceAccount:
    name: ignored
    annotations: {team: other, owner: sre}
`)
	var d appsv1.Deployment
	objs.typed(t, key("Deployment", namespace, autoscalerName), &d)
	args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range []string{"--nodes=0:1:a --nodes=1:2:b", "--expander=price", "--v=4"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "--v=2") || strings.Contains(args, "least-waste") {
		t.Errorf("args %q keep the overridden clusterAutoscaler.extraArgs", args)
	}
	sa := serviceAccount(t, objs, "ca")
	if d.Spec.Template.Spec.ServiceAccountName != "ca" || sa.Annotations["team"] != "platform" || sa.Annotations["owner"] != "sre" ||
		sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("service account %s: annotations %v, automount %v; want ca with team=platform, owner=sre, no token automount",
			d.Spec.Template.Spec.ServiceAccountName, sa.Annotations, sa.AutomountServiceAccountToken)
	}
}

// TestExistingServiceAccount: with create false the chart makes no
// ServiceAccount, runs as the named one and binds its roles to it.
func TestExistingServiceAccount(t *testing.T) {
	objs := renderValues(t, "rbac: {serviceAccount: {create: false, name: irsa-autoscaler}}\n")
	for _, u := range objs.ofKind("ServiceAccount") {
		if u.GetName() == "irsa-autoscaler" || u.GetName() == autoscalerName {
			t.Errorf("ServiceAccount %s rendered with create false", u.GetName())
		}
	}
	var d appsv1.Deployment
	objs.typed(t, key("Deployment", namespace, autoscalerName), &d)
	if d.Spec.Template.Spec.ServiceAccountName != "irsa-autoscaler" {
		t.Errorf("runs as %q, want irsa-autoscaler", d.Spec.Template.Spec.ServiceAccountName)
	}
	var rb rbacv1.RoleBinding
	objs.typed(t, key("RoleBinding", namespace, autoscalerName), &rb)
	checkBinding(t, rb.RoleRef, rb.Subjects, "Role", autoscalerName, "irsa-autoscaler")
}

// TestSchemaRefusesUnknownKeys: values.schema.json stops an install on a key
// the chart does not know, naming it, at every level.
func TestSchemaRefusesUnknownKeys(t *testing.T) {
	cases := []struct{ values, want string }{
		// Upstream names without a gpuscale meaning here.
		{"replicaCount: 3\n", "additional properties 'replicaCount' not allowed"},
		{"azureClientID: x\n", "additional properties 'azureClientID' not allowed"},
		// Misspellings.
		{"clusterAutoscaler:\n  extraArg: {v: 2}\n", "at '/clusterAutoscaler': additional properties 'extraArg' not allowed"},
		{"metricsAdapter:\n  rules:\n    customs: []\n", "at '/metricsAdapter/rules': additional properties 'customs' not allowed"},
		{"rbac:\n  serviceAccount:\n    annotation: {}\n", "at '/rbac/serviceAccount': additional properties 'annotation' not allowed"},
		// Wrong shapes.
		{"autoscalingGroups: [{name: a, minSize: 0}]\n", "at '/autoscalingGroups/0': missing property 'maxSize'"},
		{"image:\n  pullSecrets: [{secret: a}]\n", "/image/pullSecrets/0"},
	}
	for _, c := range cases {
		if err := templateError(t, c.values); !strings.Contains(err, c.want) {
			t.Errorf("values %q: error %q does not say %q", c.values, err, c.want)
		}
	}
}

// TestUpstreamValuesRefused: upstream values that would mean something
// else here stop rendering with the value named.
func TestUpstreamValuesRefused(t *testing.T) {
	cases := []struct{ values, want string }{
		{"awsRegion: us-east-1\nclusterAutoscaler:\n  cloudProvider: gce\n", `awsRegion: sets AWS_REGION for cloudProvider aws; got "gce"`},
		{"autoDiscovery: {clusterName: c}\nclusterAutoscaler:\n  cloudProvider: gce\n", "autoDiscovery.clusterName: discovers Auto Scaling groups by tag, for cloudProvider aws"},
		{"autoscalingGroupsnamePrefix: [{name: p, minSize: 0, maxSize: 1}]\n", "autoscalingGroupsnamePrefix: discovers managed instance groups, for cloudProvider gce"},
		{"extraArgs: {nodes_1: '1:3:a'}\n", "extraArgs.nodes_1: set by the chart"},
		{"awsRegion: us-east-1\nclusterAutoscaler:\n  env: [{name: AWS_REGION, value: us-west-2}]\n", "environment variable AWS_REGION of the autoscaler is set twice"},
		{"extraEnv: {AWS_REGION: us-east-1}\nawsRegion: eu-west-1\n", "environment variable AWS_REGION of the autoscaler is set twice"},
		{"rbac: {serviceAccount: {create: false}}\n", "rbac.serviceAccount.name (or clusterAutoscaler.serviceAccount.name): name the existing ServiceAccount"},
		{"metricsAdapter: {serviceAccount: {create: false}}\n", "metricsAdapter.serviceAccount.name: name the existing ServiceAccount"},
		{"image: {repository: registry.k8s.io/autoscaling/cluster-autoscaler, tag: v1.35.0}\n", "image.repository: registry.k8s.io/autoscaling/cluster-autoscaler is the upstream Cluster Autoscaler's image"},
	}
	for _, c := range cases {
		if err := templateError(t, c.values); !strings.Contains(err, c.want) {
			t.Errorf("values %q: error %q does not say %q", c.values, err, c.want)
		}
	}
}

// TestPullSecretsReachEveryPod: image.pullSecrets (upstream's names) and
// imagePullSecrets reach every Deployment of the chart.
func TestPullSecretsReachEveryPod(t *testing.T) {
	objs := renderValues(t, "image: {pullSecrets: [a]}\nimagePullSecrets: [{name: b}]\ndcgmSim: {enabled: true}\n")
	want := []v1.LocalObjectReference{{Name: "b"}, {Name: "a"}}
	for _, name := range []string{autoscalerName, adapterName, dcgmSimName} {
		var d appsv1.Deployment
		objs.typed(t, key("Deployment", namespace, name), &d)
		if !reflect.DeepEqual(d.Spec.Template.Spec.ImagePullSecrets, want) {
			t.Errorf("%s pulls with %v, want %v", name, d.Spec.Template.Spec.ImagePullSecrets, want)
		}
	}
}
