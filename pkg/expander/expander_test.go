package expander_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

func option(id string, nodes, pods int, cpuUsed int64, price float64) expander.Option {
	g := builder.NodeGroup(id).Price(price).Template(builder.Node("t-" + id).CPU("8").Memory("32Gi").Build()).Build()
	return expander.Option{Group: &g, NodeCount: nodes, PodCount: pods,
		Requested: snapshot.Resource{MilliCPU: cpuUsed, Memory: int64(nodes) * 16 << 30}}
}

func choose(t *testing.T, spec string, cfg expander.Config, opts ...expander.Option) string {
	t.Helper()
	c, err := expander.NewChain(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := c.Choose(opts)
	if !ok {
		t.Fatal("no choice")
	}
	return o.Group.ID
}

func TestStrategies(t *testing.T) {
	a := option("a", 3, 10, 20000, 1.0) // 24 cpu offered, 20 used
	b := option("b", 2, 12, 8000, 2.0)  // 16 offered, 8 used
	c := option("c", 5, 12, 39000, 0.5) // 40 offered, 39 used
	cases := []struct{ spec, want string }{
		{"most-pods,least-nodes", "b"},
		{"least-nodes", "b"},
		{"least-waste", "c"},
		{"price", "c"}, // 2.5/12 per pod beats 3/10 and 4/12
		{"most-pods,price", "c"},
	}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			if got := choose(t, tc.spec, expander.Config{}, a, b, c); got != tc.want {
				t.Errorf("%s chose %s, want %s", tc.spec, got, tc.want)
			}
		})
	}
}

func TestPriceIgnoresUnpricedGroupsWhenSomeArePriced(t *testing.T) {
	free := option("unpriced", 1, 1, 1000, 0)
	paid := option("paid", 1, 1, 1000, 3)
	if got := choose(t, "price", expander.Config{}, free, paid); got != "paid" {
		t.Errorf("chose %s, want paid", got)
	}
}

func TestRandomIsSeededAndDeterministic(t *testing.T) {
	opts := []expander.Option{option("a", 1, 1, 0, 0), option("b", 1, 1, 0, 0), option("c", 1, 1, 0, 0)}
	seen := map[string]bool{}
	for seed := int64(0); seed < 20; seed++ {
		first := choose(t, "random", expander.Config{Seed: seed}, opts...)
		if again := choose(t, "random", expander.Config{Seed: seed}, opts...); again != first {
			t.Fatalf("seed %d chose %s then %s", seed, first, again)
		}
		seen[first] = true
	}
	if len(seen) < 2 {
		t.Errorf("20 seeds always chose the same group: %v", seen)
	}
}

func TestPriority(t *testing.T) {
	p, err := expander.ParsePriorities("10:\n  - .*p2-node-group.*\n50:\n  - .*p3-node-group.*\n")
	if err != nil {
		t.Fatal(err)
	}
	p2, p3, other := option("eks-p2-node-group-1", 1, 1, 0, 0), option("eks-p3-node-group-1", 1, 1, 0, 0), option("cpu", 1, 1, 0, 0)
	if got := choose(t, "priority", expander.Config{Priorities: p}, p2, p3, other); got != "eks-p3-node-group-1" {
		t.Errorf("chose %s, want the p3 group (priority 50)", got)
	}
	if got := choose(t, "priority", expander.Config{Priorities: p}, p2, other); got != "eks-p2-node-group-1" {
		t.Errorf("without p3 chose %s, want p2", got)
	}
	if got := choose(t, "priority,least-nodes", expander.Config{Priorities: p}, other, option("cpu-2", 2, 1, 0, 0)); got != "cpu" {
		t.Errorf("no group matching: chose %s, want the next expander to decide (cpu)", got)
	}
}

func TestPriorityConfigErrorsNameLineAndValue(t *testing.T) {
	cases := []struct{ text, want string }{
		{"10:\n  - .*ok.*\n20:\n  - \"([bad\"\n", "line 4: expression \"([bad\""},
		{"ten:\n  - .*\n", "line 1: priority \"ten\" is not an integer"},
		{"10: .*\n", "line 1: priority 10: want a list"},
		{"10: [\n", "cluster-autoscaler-priority-expander"},
		// A nested list or a map item used to become an empty expression,
		// which matches every group.
		{"10:\n  - .*ok.*\n  - [a, b]\n", "line 3: priority 10: want a regular expression (a non-empty string), got a list"},
		{"10:\n  - name: .*gpu.*\n", "line 2: priority 10: want a regular expression (a non-empty string), got a map"},
		{"10:\n  -\n  - .*ok.*\n", "line 2: priority 10: want a regular expression (a non-empty string), got nothing"},
		{"10:\n  - \"\"\n", "line 2: priority 10: want a regular expression"},
		{"10:\n  - .*a.*\n20:\n  - .*b.*\n10:\n  - .*c.*\n", "line 5: priority 10 is given twice (first on line 1)"},
		{"10:\n  - .*a.*\n010:\n  - .*b.*\n", "line 3: priority 10 is given twice (first on line 1)"},
		{"[1, 2]:\n  - .*a.*\n", "line 1: a priority must be an integer, got a list"},
	}
	for _, tc := range cases {
		_, err := expander.ParsePriorities(tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePriorities(%q) = %v, want an error containing %q", tc.text, err, tc.want)
		}
	}
}

func TestUnknownExpanderIsRefused(t *testing.T) {
	_, err := expander.NewChain("least-waste,cheapest", expander.Config{})
	if err == nil || !strings.Contains(err.Error(), `"cheapest"`) {
		t.Errorf("err = %v, want it to name \"cheapest\"", err)
	}
	if _, err := expander.NewChain("priority", expander.Config{}); err == nil {
		t.Error("priority without a ConfigMap accepted")
	}
}

// Every option weighed gets a verdict: the expander that dropped it, its
// score there and the best one, or the random tie-break it lost.
func TestChooseExplained(t *testing.T) {
	a := option("a", 3, 10, 20000, 1.0)
	b := option("b", 2, 12, 8000, 2.0)
	c := option("c", 5, 12, 39000, 0.5)
	d := option("d", 5, 12, 39000, 0.5) // c's twin: a tie for random
	chain, err := expander.NewChain("most-pods,price", expander.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	chosen, ok, verdicts := chain.ChooseExplained([]expander.Option{a, b, c, d})
	if !ok || len(verdicts) != 4 {
		t.Fatalf("chosen %v, verdicts %+v", ok, verdicts)
	}
	byGroup := map[string]string{}
	for _, v := range verdicts {
		byGroup[v.Group] = v.Message()
	}
	if byGroup["a"] != "dropped by most-pods: 10 pods, the best had 12 pods" ||
		byGroup["b"] != "dropped by price: $0.3333/h per pod, the best had $0.2083/h per pod" {
		t.Errorf("verdicts %v", byGroup)
	}
	loser := "c"
	if chosen.Group.ID == "c" {
		loser = "d"
	}
	if byGroup[chosen.Group.ID] != "chosen" || !strings.Contains(byGroup[loser], "random tie-break") {
		t.Errorf("chosen %s, verdicts %v", chosen.Group.ID, byGroup)
	}
	again, _ := expander.NewChain("most-pods,price", expander.Config{Seed: 1})
	if plain, _ := again.Choose([]expander.Option{a, b, c, d}); plain.Group.ID != chosen.Group.ID {
		t.Errorf("Choose picked %s where ChooseExplained picked %s with the same seed", plain.Group.ID, chosen.Group.ID)
	}
}

// TestLeastWasteOverPartitions: seven 1g.10gb pods waste nothing on a node
// of seven MIG slices and six sevenths of a whole-GPU node each; the MIG
// group wins although it offers fewer "GPUs" by count.
func TestLeastWasteOverPartitions(t *testing.T) {
	mk := func(id string, tmpl *v1.Node, nodes int, req snapshot.Resource) expander.Option {
		g := builder.NodeGroup(id).Template(tmpl).Build()
		return expander.Option{Group: &g, NodeCount: nodes, PodCount: 7, Requested: req}
	}
	cpuMem := snapshot.Resource{MilliCPU: 7000, Memory: 14 << 30}
	mig := cpuMem.Clone()
	mig.Scalar = map[v1.ResourceName]int64{"nvidia.com/mig-1g.10gb": 7}
	whole := cpuMem.Clone()
	whole.Scalar = map[v1.ResourceName]int64{"nvidia.com/gpu": 7}
	migGroup := mk("mig", builder.Node("t1").CPU("8").Memory("16Gi").Allocatable("nvidia.com/mig-1g.10gb", "7").Build(), 1, mig)
	wholeGroup := mk("whole", builder.Node("t2").CPU("8").Memory("16Gi").GPU(1).Build(), 7, whole)
	if got := choose(t, "least-waste", expander.Config{}, wholeGroup, migGroup); got != "mig" {
		t.Errorf("least-waste chose %s, want mig", got)
	}
	// DRA devices: two options alike but for what their devices leave idle.
	a := mk("dra-8", builder.Node("t3").CPU("8").Memory("16Gi").Build(), 1, cpuMem)
	a.DeviceUnitsOffered, a.DeviceUnitsTaken = 8, 7
	b := mk("dra-7", builder.Node("t4").CPU("8").Memory("16Gi").Build(), 1, cpuMem)
	b.DeviceUnitsOffered, b.DeviceUnitsTaken = 7, 7
	if got := choose(t, "least-waste", expander.Config{}, a, b); got != "dra-7" {
		t.Errorf("least-waste chose %s, want dra-7", got)
	}
}

// TestLeastWasteCountsEveryAccelerator: two AMD groups alike in cpu and
// memory; the one whose GPUs the pods fill wins under every seed.
func TestLeastWasteCountsEveryAccelerator(t *testing.T) {
	req := snapshot.Resource{MilliCPU: 8000, Memory: 16 << 30, Scalar: map[v1.ResourceName]int64{"amd.com/gpu": 2}}
	mk := func(id, gpus string) expander.Option {
		g := builder.NodeGroup(id).Template(builder.Node("t-"+id).CPU("8").Memory("16Gi").Allocatable("amd.com/gpu", gpus).Build()).Build()
		return expander.Option{Group: &g, NodeCount: 1, PodCount: 2, Requested: req}
	}
	for seed := int64(0); seed < 10; seed++ {
		if got := choose(t, "least-waste", expander.Config{Seed: seed}, mk("a-eight", "8"), mk("b-two", "2")); got != "b-two" {
			t.Errorf("seed %d: least-waste chose %s, want b-two", seed, got)
		}
	}
}

func reserved(o expander.Option, nodes, target int) expander.Option {
	g := *o.Group
	g.TargetSize = target
	g.Options = &snapshot.GroupOptions{ReservedNodes: &nodes}
	o.Group = &g
	return o
}

func TestPriceUsesReservedCapacityFirst(t *testing.T) {
	spot := option("spot", 2, 8, 16000, 1.0)
	onDemand := option("on-demand", 2, 8, 16000, 1.5)
	cases := []struct {
		name            string
		reserve, target int
		want            string
	}{
		// Within the reservation the nodes are paid for: the dearest group wins.
		{"room for both nodes", 4, 1, "on-demand"},
		// One node of two is reserved: 1.5/8 per pod beats spot's 2/8.
		{"room for one node", 4, 3, "on-demand"},
		// The reservation is used up: the group costs its price again.
		{"reservation full", 4, 4, "spot"},
		{"no reservation", 0, 0, "spot"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			od := reserved(onDemand, tc.reserve, tc.target)
			if got := choose(t, "price", expander.Config{}, spot, od); got != tc.want {
				t.Errorf("chose %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPriceReservedGroupWithoutPriceCountsWithinItsReservation(t *testing.T) {
	paid := option("paid", 1, 1, 1000, 3)
	inside := reserved(option("block", 1, 1, 1000, 0), 2, 0)
	if got := choose(t, "price", expander.Config{}, paid, inside); got != "block" {
		t.Errorf("within its reservation: chose %s, want block", got)
	}
	past := reserved(option("block", 3, 3, 1000, 0), 2, 0)
	if got := choose(t, "price", expander.Config{}, paid, past); got != "paid" {
		t.Errorf("past its reservation with no price: chose %s, want paid", got)
	}
}

// The verdict of a reserved group says how much of it the reservation paid.
func TestChooseExplainedNamesTheReservation(t *testing.T) {
	spot := option("spot", 2, 8, 16000, 1.0)
	od := reserved(option("on-demand", 2, 8, 16000, 3.0), 4, 3)
	chain, err := expander.NewChain("price", expander.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, verdicts := chain.ChooseExplained([]expander.Option{spot, od})
	for _, v := range verdicts {
		if v.Group == "on-demand" && !strings.Contains(v.Message(), "$0.3750/h per pod, 1 of 2 node(s) reserved") {
			t.Errorf("verdict %q", v.Message())
		}
	}
}
