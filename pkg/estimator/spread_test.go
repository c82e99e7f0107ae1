package estimator_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/estimator"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// The upstream estimator's "hostname topology spreading with maxSkew=1 with
// a large scaleup handles scheduling pods retroactively" case: an existing
// node in another zone, a template of 1 cpu, 12 small pods spread over
// hostnames with maxSkew 1 and minDomains 3. The existing node is a domain
// with no matching pod, so while nothing lands there every new node may
// take one pod only (12 nodes). Placing pods on it too, as kube-scheduler
// will, lets each node take four: the existing node and two new ones.
// Upstream counts the existing node among the nodes it adds (3); the scale-up
// needs 2.
func TestHostnameSpreadUsesExistingNodes(t *testing.T) {
	s := snapshot.New()
	old := builder.Node("oldnode").CPU("100m").Memory("100Mi").Pods(10).Zone("zone-jupiter").Label(v1.LabelHostname, "oldnode").Build()
	if err := s.AddNode(old); err != nil {
		t.Fatal(err)
	}
	g := builder.NodeGroup("g").Template(builder.Node("t").CPU("1").Memory("5000Mi").Pods(10).Zone("zone-mars").Build()).Build()
	if err := s.SetNodeGroup(g); err != nil {
		t.Fatal(err)
	}
	tpl, err := estimator.NewTemplate(&g, nil)
	if err != nil {
		t.Fatal(err)
	}
	three := int32(3)
	spread := pods("estimatee", 12, func(b *builder.PodBuilder) *builder.PodBuilder {
		b = b.CPU("20m").Memory("100").Label("app", "estimatee").Spread(v1.LabelHostname, 1, "app", "estimatee")
		return b
	})
	for _, p := range spread {
		p.Namespace = "universe"
		p.Spec.TopologySpreadConstraints[0].MinDomains = &three
	}
	est, err := estimator.Pack(s, tpl, classesOf(t, spread), estimator.Options{MaxNodes: 20})
	if err != nil {
		t.Fatal(err)
	}
	if est.PodCount != 12 || est.NodeCount != 2 || est.OnExisting != 4 {
		t.Errorf("packed %d pods on %d new nodes (%d on existing nodes), want 12 on 2 new nodes and 4 on the existing one",
			est.PodCount, est.NodeCount, est.OnExisting)
	}
	if len(s.Node("oldnode").Pods) != 0 {
		t.Errorf("the snapshot keeps %d estimated pods on the existing node", len(s.Node("oldnode").Pods))
	}
}

// A pod spread over hostnames that goes to an existing node takes the
// devices its claim needs there: with one GPU on the existing node and one
// per new node, three pods claiming a GPU each need two new nodes, not
// none.
func TestHostnameSpreadOnExistingNodesAllocatesClaims(t *testing.T) {
	const driver = "gpu.example.com"
	s := snapshot.New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.AddNode(builder.Node("oldnode").CPU("4").Label(v1.LabelHostname, "oldnode").Build()))
	must(s.SetResourceSlice(builder.NodeSlice("oldnode", driver, builder.Devices("gpu", 1)...)))
	must(s.SetDeviceClass(builder.DeviceClass("gpu", `device.driver == "gpu.example.com"`)))
	must(s.SetResourceClaimTemplate(builder.ClaimTemplate("one-gpu", builder.Claim("spec").Request("gpu", "gpu", 1).Build())))
	g := builder.NodeGroup("g").Template(builder.Node("t").CPU("4").Build()).
		TemplateSlices(builder.NodeSlice("t", driver, builder.Devices("gpu", 1)...)).Build()
	must(s.SetNodeGroup(g))
	tpl, err := estimator.NewTemplate(&g, nil)
	must(err)
	spread := pods("trainer", 3, func(b *builder.PodBuilder) *builder.PodBuilder {
		return b.CPU("100m").Label("app", "trainer").Spread(v1.LabelHostname, 1, "app", "trainer").ResourceClaimTemplate("gpu", "one-gpu")
	})
	est, err := estimator.Pack(s, tpl, classesOf(t, spread), estimator.Options{MaxNodes: 5})
	must(err)
	if est.PodCount != 3 || est.NodeCount != 2 || est.OnExisting != 1 {
		t.Errorf("packed %d pods on %d new nodes (%d on the existing one), want 3 on 2 new nodes and 1 on the existing one",
			est.PodCount, est.NodeCount, est.OnExisting)
	}
	if s.AllocatedDeviceCount() != 0 {
		t.Errorf("the snapshot keeps %d estimated allocations", s.AllocatedDeviceCount())
	}
}
