package run

import (
	"bytes"
	"encoding/json"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpuscale/gpuscale/pkg/explain"
)

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
