package app

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpuscale/gpuscale/pkg/explain"
)

// Wrong forms and flags are refused before any connection, with what was
// typed named; no kubeconfig is read for them.
func TestExplainRefusesBeforeConnecting(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"explain", "default/web"}, `"default/web": "default" is not a pod, node, hpa, nodegroup or cluster; for a pod in namespace default write: explain pod/web -n default`},
		{[]string{"explain", "pod", "web", "-o", "xml"}, `-o/--output: "xml" is not a format; want text, json or yaml`},
		{[]string{"explain", "node", "n1", "--namespace", "kube-system"}, "--autoscaler-namespace"},
		{[]string{"explain", "pod", "web", "-n", ""}, "-n/--namespace: must not be empty"},
		{[]string{"explain"}, "requires at least 1 arg"},
		{[]string{"explain", "cluster", "--timeout=-1s"}, "--timeout: must be positive, got -1s"},
		{[]string{"explain", "cluster", "--timeout=0s"}, "--timeout: must be positive, got 0s"},
	}
	for _, tc := range cases {
		cmd := NewRootCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append(tc.args, "--kubeconfig", "/nonexistent/kubeconfig"))
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// One answer is written as itself, several as {"items": [...]}; YAML is
// the same document.
func TestWriteReports(t *testing.T) {
	a := explain.Report{Kind: explain.KindNode, Object: "node a", Verdict: "is not removed", Details: []string{"line"},
		Node: &explain.NodeAnswer{Name: "a", Exists: true, State: "Kept"}}
	b := explain.Report{Kind: explain.KindCluster, Object: "cluster", Verdict: "healthy", Cluster: &explain.ClusterAnswer{}}
	var one bytes.Buffer
	if err := writeReports(&one, "json", []explain.Report{a}); err != nil {
		t.Fatal(err)
	}
	var single map[string]any
	if err := json.Unmarshal(one.Bytes(), &single); err != nil {
		t.Fatal(err)
	}
	if single["kind"] != "node" || single["node"].(map[string]any)["state"] != "Kept" || single["details"] != nil {
		t.Errorf("one answer: %s", one.String())
	}
	var many bytes.Buffer
	if err := writeReports(&many, "yaml", []explain.Report{a, b}); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := yaml.Unmarshal(many.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Items[1]["kind"] != "cluster" {
		t.Errorf("two answers: %s", many.String())
	}
	var text bytes.Buffer
	if err := writeReports(&text, "text", []explain.Report{a, b}); err != nil {
		t.Fatal(err)
	}
	if text.String() != "node a: is not removed\n  line\n\ncluster: healthy\n" {
		t.Errorf("text: %q", text.String())
	}
}
