package chart_test

import (
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// checkMonitors: a ServiceMonitor per part, selecting its Service, on a
// port the Service has.
func checkMonitors(t *testing.T, objs objects, names ...string) {
	t.Helper()
	for _, n := range names {
		sm := objs[key("ServiceMonitor", namespace, n)]
		if sm == nil {
			t.Errorf("ServiceMonitor %s not rendered", n)
			continue
		}
		var svc v1.Service
		objs.typed(t, key("Service", namespace, n), &svc)
		sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		if len(sel) == 0 || !labels.SelectorFromSet(sel).Matches(labels.Set(svc.Labels)) {
			t.Errorf("ServiceMonitor %s selects %v, not Service %s (%v)", n, sel, n, svc.Labels)
		}
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(eps) == 0 {
			t.Errorf("ServiceMonitor %s has no endpoints", n)
		}
		for _, ep := range eps {
			if port := ep.(map[string]any)["port"]; !servicePort(&svc, port) {
				t.Errorf("ServiceMonitor %s scrapes port %v, which Service %s lacks", n, port, n)
			}
		}
	}
}

func checkPDB(t *testing.T, objs objects, d *appsv1.Deployment, name string) {
	t.Helper()
	var pdb policyv1.PodDisruptionBudget
	objs.typed(t, key("PodDisruptionBudget", namespace, name), &pdb)
	if !labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("PodDisruptionBudget %s selects %v, not the pods of Deployment %s", name, pdb.Spec.Selector.MatchLabels, d.Name)
	}
	replicas := int(*d.Spec.Replicas)
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		if n := pdb.Spec.MaxUnavailable.IntValue(); n < 1 || n >= replicas {
			t.Errorf("PodDisruptionBudget %s maxUnavailable %d with %d replicas: want drains possible and one pod kept", name, n, replicas)
		}
	case pdb.Spec.MinAvailable != nil:
		if n := pdb.Spec.MinAvailable.IntValue(); n < 1 || n >= replicas {
			t.Errorf("PodDisruptionBudget %s minAvailable %d with %d replicas: want drains possible and one pod kept", name, n, replicas)
		}
	default:
		t.Errorf("PodDisruptionBudget %s sets neither minAvailable nor maxUnavailable", name)
	}
}

func checkServiceSelects(t *testing.T, objs objects, name string, d *appsv1.Deployment) *v1.Service {
	t.Helper()
	var svc v1.Service
	objs.typed(t, key("Service", namespace, name), &svc)
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("Service %s selects %v, not the pods of Deployment %s", name, svc.Spec.Selector, d.Name)
	}
	c := d.Spec.Template.Spec.Containers[0]
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.StrVal == "" || containerPort(&c, p.TargetPort.StrVal) == 0 {
			t.Errorf("Service %s port %s targets %q, which no container port of %s is named", name, p.Name, p.TargetPort.String(), d.Name)
		}
	}
	return &svc
}

func checkBinding(t *testing.T, ref rbacv1.RoleRef, subjects []rbacv1.Subject, kind, role, sa string) {
	t.Helper()
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: sa, Namespace: namespace}
	if ref.Kind != kind || ref.Name != role || len(subjects) != 1 || subjects[0] != want {
		t.Errorf("binding of %s %s: roleRef %s %s, subjects %+v; want %+v", kind, role, ref.Kind, ref.Name, subjects, want)
	}
}

// checkNamespaces: namespaced objects go to the release namespace,
// cluster-scoped ones carry none.
func checkNamespaces(t *testing.T, objs objects) {
	t.Helper()
	clusterScoped := map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true, "APIService": true}
	for _, k := range objs.keys() {
		u := objs[k]
		if clusterScoped[u.GetKind()] != (u.GetNamespace() == "") || (u.GetNamespace() != "" && u.GetNamespace() != namespace) {
			t.Errorf("%s: namespace %q", k, u.GetNamespace())
		}
	}
}

// checkSecurity: every container runs as non-root on a read-only root
// filesystem with no capabilities, from the one gpuscale image.
func checkSecurity(t *testing.T, objs objects) {
	t.Helper()
	for _, u := range objs.ofKind("Deployment") {
		var d appsv1.Deployment
		objs.typed(t, key("Deployment", u.GetNamespace(), u.GetName()), &d)
		for _, c := range d.Spec.Template.Spec.Containers {
			sc := c.SecurityContext
			if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
				t.Errorf("%s container %s: security context %+v, want non-root, read-only root, no privilege escalation, capabilities dropped", d.Name, c.Name, sc)
			}
			if !strings.HasPrefix(c.Image, "ghcr.io/gpuscale/gpuscale:") {
				t.Errorf("%s container %s runs image %s, want the gpuscale image", d.Name, c.Name, c.Image)
			}
		}
	}
}

func serviceAccount(t *testing.T, objs objects, name string) *v1.ServiceAccount {
	t.Helper()
	var sa v1.ServiceAccount
	objs.typed(t, key("ServiceAccount", namespace, name), &sa)
	return &sa
}

func onlyContainer(t *testing.T, d *appsv1.Deployment) *v1.Container {
	t.Helper()
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("Deployment %s has %d containers, want 1", d.Name, n)
	}
	return &d.Spec.Template.Spec.Containers[0]
}

func containerPort(c *v1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func servicePort(svc *v1.Service, port any) bool {
	for _, p := range svc.Spec.Ports {
		switch v := port.(type) {
		case string:
			if p.Name == v {
				return true
			}
		case int64:
			if int64(p.Port) == v {
				return true
			}
		case float64: // numbers decoded from YAML into a map
			if float64(p.Port) == v {
				return true
			}
		}
	}
	return false
}

// flagValues maps --name=value arguments by name.
func flagValues(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		out[k] = v
	}
	return out
}

func addressPort(t *testing.T, addr string) int32 {
	t.Helper()
	_, port, ok := strings.Cut(addr, ":")
	n, err := strconv.Atoi(port)
	if !ok || err != nil {
		t.Fatalf("address %q has no port", addr)
	}
	return int32(n)
}

func name(values string) string {
	if values == "" {
		return "values.yaml"
	}
	return values
}

func firstDiffLine(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}
