package removal_test

import (
	"slices"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/scaledown/removal"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

func TestCompareRanks(t *testing.T) {
	ranks := []removal.Rank{
		{Name: "busy", Util: 0.9},
		{Name: "cheap", Util: 0.3, Price: 1},
		{Name: "dear", Util: 0.3, Price: 4},
		{Name: "a-twin", Util: 0.3, Price: 4},
		{Name: "known", Util: 0.8, Before: true},
		{Name: "empty", Util: 0.95, Empty: true},
	}
	slices.SortFunc(ranks, func(a, b removal.Rank) int { return removal.CompareRanks(&a, &b) })
	var got []string
	for _, r := range ranks {
		got = append(got, r.Name)
	}
	// Empty first, then found before, then least used, dearer first, by name.
	want := []string{"empty", "known", "a-twin", "dear", "cheap", "busy"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestExempt(t *testing.T) {
	g := &snapshot.NodeGroup{ID: "g"}
	for _, tc := range []struct {
		name  string
		ann   string // an annotation set to "true"
		group string
		g     *snapshot.NodeGroup
		want  removal.Exemption
	}{
		{"plain", "", "g", g, ""},
		{"scale-down disabled", "cluster-autoscaler.kubernetes.io/scale-down-disabled", "g", g, removal.ExemptScaleDownDisabled},
		{"do-not-disrupt", "gpuscale.dev/do-not-disrupt", "g", g, removal.ExemptDoNotDisrupt},
		{"karpenter do-not-disrupt", "karpenter.sh/do-not-disrupt", "g", g, removal.ExemptDoNotDisrupt},
		{"no group", "", "", nil, removal.ExemptNotAutoscaled},
		{"unmanaged group", "", "other", nil, removal.ExemptNotAutoscaled},
	} {
		node := builder.Node("n").Build()
		if tc.ann != "" {
			node.Annotations = map[string]string{tc.ann: "true"}
		}
		ni := &snapshot.NodeInfo{Node: node, Group: tc.group}
		if got, msg := removal.Exempt(ni, tc.g); got != tc.want || (got != "" && msg == "") {
			t.Errorf("%s: %q (%s), want %q with a message", tc.name, got, msg, tc.want)
		}
	}
}
