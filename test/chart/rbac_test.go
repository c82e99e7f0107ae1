package chart_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// grant is one permission: a verb on a resource ("group/resource", core
// group empty, "nodes/status" for a subresource), optionally limited to
// one object name.
type grant struct {
	resource, verb, name string
}

func (g grant) String() string {
	if g.name != "" {
		return fmt.Sprintf("%s %s (%s)", g.verb, g.resource, g.name)
	}
	return g.verb + " " + g.resource
}

// autoscalerClusterGrants are the cluster-wide calls of the node
// autoscaler, by where they are made.
var autoscalerClusterGrants = []grant{
	// pkg/controller/cluster.go: the informers of the loop's snapshot.
	{"/nodes", "list", ""}, {"/nodes", "watch", ""},
	{"/pods", "list", ""}, {"/pods", "watch", ""},
	{"/namespaces", "list", ""}, {"/namespaces", "watch", ""},
	{"/persistentvolumes", "list", ""}, {"/persistentvolumes", "watch", ""},
	{"/persistentvolumeclaims", "list", ""}, {"/persistentvolumeclaims", "watch", ""},
	{"storage.k8s.io/storageclasses", "list", ""}, {"storage.k8s.io/storageclasses", "watch", ""},
	{"storage.k8s.io/csinodes", "list", ""}, {"storage.k8s.io/csinodes", "watch", ""},
	{"policy/poddisruptionbudgets", "list", ""}, {"policy/poddisruptionbudgets", "watch", ""},
	{"apps/daemonsets", "list", ""}, {"apps/daemonsets", "watch", ""},
	{"apps/replicasets", "list", ""}, {"apps/replicasets", "watch", ""},
	{"/replicationcontrollers", "list", ""}, {"/replicationcontrollers", "watch", ""},
	{"apps/statefulsets", "list", ""}, {"apps/statefulsets", "watch", ""},
	{"batch/jobs", "list", ""}, {"batch/jobs", "watch", ""},
	// pkg/controller/capacitybuffer.go: the Deployments a CapacityBuffer's
	// scalableRef may name; pkg/controller/demand.go: the HPAs whose status
	// the forecast buffers read, and the Deployments they scale.
	{"apps/deployments", "list", ""}, {"apps/deployments", "watch", ""},
	{"autoscaling/horizontalpodautoscalers", "list", ""}, {"autoscaling/horizontalpodautoscalers", "watch", ""},
	// pkg/controller/dra.go: the resource.k8s.io/v1 informers, started
	// where the API server serves the group.
	{"resource.k8s.io/deviceclasses", "list", ""}, {"resource.k8s.io/deviceclasses", "watch", ""},
	{"resource.k8s.io/resourceclaims", "list", ""}, {"resource.k8s.io/resourceclaims", "watch", ""},
	{"resource.k8s.io/resourceclaimtemplates", "list", ""}, {"resource.k8s.io/resourceclaimtemplates", "watch", ""},
	{"resource.k8s.io/resourceslices", "list", ""}, {"resource.k8s.io/resourceslices", "watch", ""},
	// pkg/controller/taints.go: taints set and removed by get and update;
	// stranded taints found by list.
	{"/nodes", "get", ""}, {"/nodes", "update", ""},
	// pkg/controller/drain.go: a pod re-read before eviction, the Eviction API.
	{"/pods", "get", ""}, {"/pods/eviction", "create", ""},
	// pkg/controller/interruption.go: a pod a budget still holds at the
	// end of its node's notice is deleted.
	{"/pods", "delete", ""},
	// pkg/controller/controller.go: client-go's event recorder creates
	// events and patches repeated ones.
	{"/events", "create", ""}, {"/events", "patch", ""},
	// pkg/controller/provisioning.go: the PodTemplates ProvisioningRequests name.
	{"/podtemplates", "list", ""}, {"/podtemplates", "watch", ""},
}

// provisioningClusterGrants: pkg/controller/provisioning.go watches
// ProvisioningRequests and writes their status through the dynamic client
// (the API is a CRD), which the source scan of TestGrantsCoverTheCode does
// not see; the chart grants them with provisioningRequests.enabled.
var provisioningClusterGrants = []grant{
	{"autoscaling.x-k8s.io/provisioningrequests", "get", ""}, {"autoscaling.x-k8s.io/provisioningrequests", "list", ""},
	{"autoscaling.x-k8s.io/provisioningrequests", "watch", ""}, {"autoscaling.x-k8s.io/provisioningrequests/status", "update", ""},
}

// bufferClusterGrants: pkg/controller/capacitybuffer.go watches
// CapacityBuffers and writes their status through the dynamic client; the
// chart grants them with capacityBuffers.enabled.
var bufferClusterGrants = []grant{
	{"autoscaling.x-k8s.io/capacitybuffers", "get", ""}, {"autoscaling.x-k8s.io/capacitybuffers", "list", ""},
	{"autoscaling.x-k8s.io/capacitybuffers", "watch", ""}, {"autoscaling.x-k8s.io/capacitybuffers/status", "update", ""},
}

// kwokClusterGrants are the kwok provider's own: it creates and deletes the
// Nodes of its groups (reconcile.go, provider.go), patches their status
// when the simulated device plugin advertises GPUs, and publishes the
// ResourceSlices of DRA groups' nodes (reconcile.go publishSlices).
var kwokClusterGrants = []grant{
	{"/nodes", "create", ""}, {"/nodes", "delete", ""}, {"/nodes/status", "patch", ""},
	{"resource.k8s.io/resourceslices", "create", ""},
}

// autoscalerNamespaceGrants are the calls in --namespace (the release
// namespace).
var autoscalerNamespaceGrants = []grant{
	// pkg/controller/status.go writes the status ConfigMap (create once,
	// then get and update); the kwok state ConfigMap is created the same way.
	{"/configmaps", "create", ""},
	{"/configmaps", "get", "cluster-autoscaler-status"}, {"/configmaps", "update", "cluster-autoscaler-status"},
	// internal/run reads the priority expander's ConfigMap at start.
	{"/configmaps", "get", "cluster-autoscaler-priority-expander"},
	// pkg/controller/leader.go: client-go's Lease lock.
	{"coordination.k8s.io/leases", "create", ""},
	{"coordination.k8s.io/leases", "get", "cluster-autoscaler"}, {"coordination.k8s.io/leases", "update", "cluster-autoscaler"},
}

// kwokNamespaceGrants: pkg/cloudprovider/kwok reads its configuration
// ConfigMap and keeps its pending creations in a state ConfigMap.
var kwokNamespaceGrants = []grant{
	{"/configmaps", "get", "gpuscale-kwok-config"},
	{"/configmaps", "get", "gpuscale-kwok-state"}, {"/configmaps", "update", "gpuscale-kwok-state"},
}

// TestAutoscalerRBACIsExact: the chart grants the node autoscaler exactly
// the calls above, no wildcard and nothing more, for each provider.
func TestAutoscalerRBACIsExact(t *testing.T) {
	for _, values := range []string{"values-aws.yaml", "values-gce.yaml", "values-kwok.yaml"} {
		t.Run(values, func(t *testing.T) {
			objs := render(t, values)
			var cr rbacv1.ClusterRole
			objs.typed(t, key("ClusterRole", "", autoscalerName), &cr)
			var role rbacv1.Role
			objs.typed(t, key("Role", namespace, autoscalerName), &role)

			wantCluster := append(append(append([]grant(nil), autoscalerClusterGrants...), provisioningClusterGrants...), bufferClusterGrants...)
			wantNS := append([]grant(nil), autoscalerNamespaceGrants...)
			if values == "values-kwok.yaml" {
				wantCluster = append(wantCluster, kwokClusterGrants...)
				wantNS = append(wantNS, kwokNamespaceGrants...)
			}
			compareGrants(t, "ClusterRole "+cr.Name, flatten(t, cr.Rules), wantCluster)
			compareGrants(t, "Role "+role.Name, flatten(t, role.Rules), wantNS)
		})
	}
}

// TestAdapterRBACIsExact: the adapter only watches the names of the
// objects its rules name (pkg/metricsadapter/provider's InformerLister,
// metadata-only informers answering label-selector queries);
// authentication and authorization are delegated through the two standard
// roles checked in TestRendered. dcgm-sim is held to dcgmSimGrants.
func TestAdapterRBACIsExact(t *testing.T) {
	objs := render(t, "")
	var cr rbacv1.ClusterRole
	objs.typed(t, key("ClusterRole", "", adapterName+"-resource-reader"), &cr)
	compareGrants(t, "ClusterRole "+cr.Name, flatten(t, cr.Rules), []grant{{"/namespaces", "list", ""}, {"/namespaces", "watch", ""}, {"/pods", "list", ""}, {"/pods", "watch", ""}})

	objs = render(t, "values-kwok.yaml")
	objs.typed(t, key("ClusterRole", "", dcgmSimName), &cr)
	compareGrants(t, "ClusterRole "+cr.Name, flatten(t, cr.Rules), dcgmSimGrants)
}

// dcgmSimGrants: pkg/dcgmsim watches nodes and pods through informers.
var dcgmSimGrants = []grant{{"/nodes", "list", ""}, {"/nodes", "watch", ""}, {"/pods", "list", ""}, {"/pods", "watch", ""}}

// TestGrantsCoverTheCode reads the autoscaler's source and lists every
// Kubernetes resource it reaches through client-go's typed clients and
// informers: the grants above must name exactly those resources, so a new
// call without a grant, or a grant no code uses, fails here. (Which verbs
// suffice is proven on a real cluster by TestAutoscalerRBACOnCluster.)
func TestGrantsCoverTheCode(t *testing.T) {
	root := repoRoot(t)
	shared, kwokOnly := map[string]bool{}, map[string]bool{}
	for _, dir := range []string{"pkg/controller", "pkg/cloudprovider", "internal/run"} {
		for res, files := range scanResources(t, filepath.Join(root, dir)) {
			for _, f := range files {
				if strings.Contains(filepath.ToSlash(f), "pkg/cloudprovider/kwok/") {
					kwokOnly[res] = true
				} else {
					shared[res] = true
				}
			}
		}
	}
	check := func(what string, found map[string]bool, grants ...[]grant) {
		granted := map[string]bool{}
		for _, gs := range grants {
			for _, g := range gs {
				granted[g.resource] = true
			}
		}
		if got, want := sortedKeys(found), sortedKeys(granted); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: the code reaches %v, the grants name %v", what, got, want)
		}
	}
	for r := range shared {
		delete(kwokOnly, r)
	}
	check("autoscaler", shared, autoscalerClusterGrants, autoscalerNamespaceGrants)
	kwokResources := map[string]bool{}
	for _, g := range append(append([]grant(nil), kwokClusterGrants...), kwokNamespaceGrants...) {
		if !resourceIn(g.resource, autoscalerClusterGrants, autoscalerNamespaceGrants) {
			kwokResources[g.resource] = true
		}
	}
	if got, want := sortedKeys(kwokOnly), sortedKeys(kwokResources); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("kwok provider: the code alone reaches %v, its own grants name %v", got, want)
	}

	dcgm := map[string]bool{}
	for res := range scanResources(t, filepath.Join(root, "pkg", "dcgmsim")) {
		dcgm[res] = true
	}
	check("dcgm-sim", dcgm, dcgmSimGrants)
}

// flatten turns rules into grants, refusing wildcards and non-resource URLs.
func flatten(t *testing.T, rules []rbacv1.PolicyRule) []grant {
	t.Helper()
	var out []grant
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %+v grants non-resource URLs", r)
		}
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if g == "*" || res == "*" || v == "*" {
						t.Errorf("rule %+v uses a wildcard", r)
					}
					for _, n := range names {
						out = append(out, grant{g + "/" + res, v, n})
					}
				}
			}
		}
	}
	return out
}

func compareGrants(t *testing.T, what string, got, want []grant) {
	t.Helper()
	g, w := grantSet(got), grantSet(want)
	for k := range g {
		if w[k] {
			delete(g, k)
			delete(w, k)
		}
	}
	if len(g) > 0 {
		t.Errorf("%s grants what no code calls: %v", what, sortedKeys(g))
	}
	if len(w) > 0 {
		t.Errorf("%s lacks what the code calls: %v", what, sortedKeys(w))
	}
}

func grantSet(gs []grant) map[string]bool {
	out := map[string]bool{}
	for _, g := range gs {
		out[g.String()] = true
	}
	return out
}

func resourceIn(res string, lists ...[]grant) bool {
	for _, l := range lists {
		for _, g := range l {
			if g.resource == res {
				return true
			}
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// clientGroups maps client-go's typed client accessors (CoreV1()) and
// informer factory groups (Core()) to API groups.
var clientGroups = map[string]string{
	"CoreV1": "", "Core": "", "AppsV1": "apps", "Apps": "apps", "BatchV1": "batch", "Batch": "batch",
	"PolicyV1": "policy", "Policy": "policy", "StorageV1": "storage.k8s.io", "Storage": "storage.k8s.io",
	"CoordinationV1": "coordination.k8s.io", "Coordination": "coordination.k8s.io",
	"EventsV1": "events.k8s.io", "RbacV1": "rbac.authorization.k8s.io", "AutoscalingV2": "autoscaling", "Autoscaling": "autoscaling",
	"ResourceV1": "resource.k8s.io", "Resource": "resource.k8s.io",
}

// scanResources finds, in the non-test Go files under dir, every resource
// reached as client.CoreV1().Nodes(), factory.Core().V1().Pods(), through a
// variable holding such a group (core := f.Core().V1(); core.Pods()), and
// client-go's Lease lock; a .PatchStatus/.UpdateStatus call adds the status
// subresource. It returns the files per "group/resource".
func scanResources(t *testing.T, dir string) map[string][]string {
	t.Helper()
	found := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		add := func(res string) { found[res] = append(found[res], path) }
		groupVars := map[string]string{}
		ast.Inspect(f, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
				for i, rhs := range as.Rhs {
					if g, ok := groupOf(rhs, nil); ok {
						if id, ok := as.Lhs[i].(*ast.Ident); ok {
							groupVars[id.Name] = g
						}
					}
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "resourcelock" && n.Sel.Name == "LeasesResourceLock" {
					add("coordination.k8s.io/leases")
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if res, ok := resourceOf(sel, groupVars); ok {
					add(res)
				}
				if sel.Sel.Name == "PatchStatus" || sel.Sel.Name == "UpdateStatus" {
					if inner, ok := sel.X.(*ast.CallExpr); ok {
						if isel, ok := inner.Fun.(*ast.SelectorExpr); ok {
							if res, ok := resourceOf(isel, groupVars); ok {
								add(res + "/status")
							}
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// resourceOf reads X.Nodes() where X is a group: the resource's name is the
// accessor's, lower-cased.
func resourceOf(sel *ast.SelectorExpr, groupVars map[string]string) (string, bool) {
	g, ok := groupOf(sel.X, groupVars)
	if !ok {
		return "", false
	}
	res := strings.ToLower(sel.Sel.Name)
	if res == "evictions" {
		// The policy group's Eviction is posted to the core pods/eviction
		// subresource, which is what RBAC names.
		return "/pods/eviction", true
	}
	return g + "/" + res, true
}

// groupOf reports the API group of a typed client group expression:
// c.CoreV1(), f.Core().V1(), or a variable assigned one of them.
func groupOf(e ast.Expr, groupVars map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.Ident:
		g, ok := groupVars[e.Name]
		return g, ok
	case *ast.CallExpr:
		sel, ok := e.Fun.(*ast.SelectorExpr)
		if !ok || len(e.Args) != 0 {
			return "", false
		}
		if g, ok := clientGroups[sel.Sel.Name]; ok && strings.Contains(sel.Sel.Name, "V") {
			return g, true
		}
		// factory.Core().V1()
		if strings.HasPrefix(sel.Sel.Name, "V") {
			if inner, ok := sel.X.(*ast.CallExpr); ok && len(inner.Args) == 0 {
				if isel, ok := inner.Fun.(*ast.SelectorExpr); ok {
					if g, ok := clientGroups[isel.Sel.Name]; ok && !strings.Contains(isel.Sel.Name, "V") {
						return g, true
					}
				}
			}
		}
	}
	return "", false
}

// TestShardRBACFollowsTheStatusConfigMapNames: a shard deployed with its
// own --status-config-map-name (and its peers' --shard-peer-status-config-map)
// through extraArgs gets exactly those names in its Role, not the default.
func TestShardRBACFollowsTheStatusConfigMapNames(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		write, read  []string
	}{
		{"defaults", "", []string{"cluster-autoscaler-status"}, nil},
		{"own name and two peers", `clusterAutoscaler:
  extraArgs:
    status-config-map-name: shard-a-status
    shard-peer-status-config-map: [shard-b-status, shard-c-status]
`, []string{"shard-a-status"}, []string{"shard-b-status", "shard-c-status"}},
		{"upstream extraArgs with one peer", `extraArgs:
  status-config-map-name: shard-b-status
  shard-peer-status-config-map: shard-a-status
`, []string{"shard-b-status"}, []string{"shard-a-status"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderValues(t, tc.values)
			var role rbacv1.Role
			objs.typed(t, key("Role", namespace, autoscalerName), &role)
			var want []grant
			for _, g := range autoscalerNamespaceGrants {
				if g.name != "cluster-autoscaler-status" {
					want = append(want, g)
				}
			}
			for _, n := range tc.write {
				want = append(want, grant{"/configmaps", "get", n}, grant{"/configmaps", "update", n})
			}
			for _, n := range tc.read {
				want = append(want, grant{"/configmaps", "get", n})
			}
			compareGrants(t, "Role "+role.Name, flatten(t, role.Rules), want)
		})
	}
}
