package consolidation

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/estimator"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/scaledown/removal"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// trial is a replacement weighed: nodes out, their pods on the remaining
// nodes where they fit and on new nodes of one group otherwise.
type trial struct {
	nodes         []int32
	launch        Launch
	before, after float64
	evictions     []Eviction
	ds            []*v1.Pod
	ok            bool
	why           string
}

func (t *trial) savings() float64 { return t.before - t.after }

// replacePass looks for one replacement, after every deletion of the pass:
// the best multi-node one among nodes of each kind (GPU type, or no GPU),
// else the first single node in candidate order that a cheaper node can
// replace. One a pass, so that it is planned on the cluster as it will be
// when its new nodes are Ready: with every deletion of this pass done, and
// no other replacement half done. Nodes that received pods in this pass are
// left out, or those pods would move twice.
func (s *session) replacePass() {
	var left []int32
	for _, i := range s.cands {
		if st := &s.nodes[i]; st.fate == undecided && !st.received {
			left = append(left, i)
		}
	}
	var best *trial
	for _, part := range partitions(s, left) {
		if t := s.multiNode(part); t != nil && (best == nil || better(t, best)) {
			best = t
		}
	}
	if best == nil {
		for _, i := range left {
			t := s.tryReplace([]int32{i})
			if t.ok {
				best = &t
				break
			}
			if st := &s.nodes[i]; st.fate == undecided {
				s.keep(i, ReasonNoCheaperPlacement, joinWhy(st.miss, t.why))
			}
		}
	}
	if best != nil {
		if ok, since := s.stable(best.nodes); ok {
			s.carry(best)
		} else {
			s.wait(best.kind(), best.nodes, since)
		}
	}
	for _, i := range s.cands {
		st := &s.nodes[i]
		switch {
		case st.fate != undecided:
		case st.received:
			s.keep(i, ReasonReceivesPods, joinWhy(st.miss,
				"pods of a move of this pass are planned onto it; weighed again in the next pass"))
		case best != nil:
			s.keep(i, ReasonReplacementChosen, joinWhy(st.miss,
				"a replacement is already weighed in this pass (one a pass); weighed again in the next"))
		default:
			s.keep(i, ReasonNoCheaperPlacement, joinWhy(st.miss, "no replacement weighed"))
		}
	}
}

func (t *trial) kind() MoveKind {
	if t.launch.Count == 0 {
		return MoveDelete
	}
	return MoveReplace
}

// better prefers the larger saving, then more nodes removed.
func better(a, b *trial) bool {
	if a.savings() != b.savings() {
		return a.savings() > b.savings()
	}
	return len(a.nodes) > len(b.nodes)
}

func joinWhy(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// partitions splits candidates by kind, keeping their order; kinds in
// order of their first candidate.
func partitions(s *session, cands []int32) [][]int32 {
	var kinds []string
	by := map[string][]int32{}
	for _, i := range cands {
		k := s.nodes[i].kind
		if _, ok := by[k]; !ok {
			kinds = append(kinds, k)
		}
		by[k] = append(by[k], i)
	}
	out := make([][]int32, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, by[k])
	}
	return out
}

// multiNode weighs replacing several nodes of part at once: a prefix of it
// (at most MaxBatch nodes that the budgets and minimum sizes let go
// together) by new nodes of one group. Whether a prefix works does not grow
// or shrink steadily with its length (four 1-GPU nodes fit one 4-GPU node,
// five need two), so the lengths worth a trial are found from the prefixes'
// summed requests and prices: for each group, the length with the largest
// estimated saving if every pod needed the new nodes. Those lengths are
// tried, best estimate first, and the first that works is the move. Nil
// when none of two nodes or more works.
func (s *session) multiNode(part []int32) *trial {
	var list []int32
	counts := map[*groupRoom]int{}
	for _, i := range part {
		if len(list) >= s.opts.MaxBatch {
			break
		}
		g := s.room.group(s.nodes[i].group)
		if reason, _ := s.room.disrupt(g, counts[g]+1); reason != "" {
			continue
		}
		counts[g]++
		list = append(list, i)
	}
	if len(list) < 2 {
		return nil
	}
	for _, k := range s.promisingLengths(list) {
		if t := s.tryReplace(list[:k]); t.ok {
			return &t
		}
	}
	return nil
}

// promisingLengths returns prefix lengths of list (two or more), best
// estimated saving first, at most one for each node group.
func (s *session) promisingLengths(list []int32) []int {
	type sums struct{ cpu, mem, gpus, price float64 }
	prefix := make([]sums, len(list)+1)
	for k, i := range list {
		st := &s.nodes[i]
		r := &st.ni.Requested
		prefix[k+1] = sums{cpu: prefix[k].cpu + float64(r.MilliCPU), mem: prefix[k].mem + float64(r.Memory),
			gpus: prefix[k].gpus + float64(st.gpus-st.freeGPUs), price: prefix[k].price + st.price}
	}
	type option struct {
		k       int
		savings float64
	}
	var opts []option
	for _, g := range s.snap.NodeGroups() {
		if g.Template == nil || g.PricePerHour <= 0 || snapshot.Queued(g) {
			continue
		}
		alloc := snapshot.ResourceFromList(g.Template.Status.Allocatable)
		gpus := float64(gpu.Requested(&alloc))
		best := option{}
		for k := 2; k <= len(list); k++ {
			p := prefix[k]
			if p.gpus > 0 && gpus == 0 {
				break
			}
			m := math.Max(math.Max(need(p.cpu, float64(alloc.MilliCPU)), need(p.mem, float64(alloc.Memory))), need(p.gpus, gpus))
			after := math.Max(m, 1) * g.PricePerHour
			if after > p.price*(1-s.opts.MinSavings)+1e-9 {
				continue
			}
			if sv := p.price - after; sv >= best.savings {
				best = option{k: k, savings: sv}
			}
		}
		if best.k > 0 {
			opts = append(opts, best)
		}
	}
	slices.SortStableFunc(opts, func(a, b option) int {
		if a.savings != b.savings {
			return cmp.Compare(b.savings, a.savings)
		}
		return cmp.Compare(b.k, a.k)
	})
	var ks []int
	for _, o := range opts {
		if !slices.Contains(ks, o.k) {
			ks = append(ks, o.k)
		}
	}
	return ks
}

// need is how many nodes of capacity c a demand d takes, rounded up; a
// demand the node does not offer cannot be met.
func need(d, c float64) float64 {
	switch {
	case d <= 0:
		return 0
	case c <= 0:
		return math.Inf(1)
	}
	return math.Ceil(d/c - 1e-9)
}

// tryReplace weighs replacing nodes and undoes every change to the snapshot.
func (s *session) tryReplace(nodes []int32) trial {
	t := trial{nodes: slices.Clone(nodes)}
	for _, i := range nodes {
		t.before += s.nodes[i].price
	}
	items, ds, ok := s.podsToMove(nodes)
	if !ok {
		t.why = "a pod is blocked"
		return t
	}
	t.ds = ds
	mark := s.sim.Mark()
	fits := make([]bool, len(items))
	for k := range items {
		it := &items[k]
		s.prepare(it)
		_, fits[k] = s.sim.FitsAlone(it.From, it.P)
	}
	s.snap.Fork()
	for _, i := range nodes {
		_ = s.snap.RemoveNode(s.nodes[i].name()) // candidates are in the snapshot
		s.sim.SetGone(i, true)
	}
	s.placeSome(items, fits)
	var leftovers []*removal.Item
	for k := range items {
		if items[k].Dest < 0 {
			leftovers = append(leftovers, &items[k])
		}
	}
	t.launch, t.after, t.why, t.ok = s.cheapestLaunch(nodes, t.before, len(items), leftovers)
	if t.ok {
		if reason, msg := s.room.belowMinimum(s, nodes, t.launch); reason != "" {
			t.ok, t.why = false, msg
		}
	}
	if t.ok {
		for k := range items {
			it := &items[k]
			ev := Eviction{Pod: it.P.Orig, ToReplacement: it.Dest < 0}
			if it.Dest >= 0 {
				ev.To = s.nodes[it.Dest].name()
			}
			t.evictions = append(t.evictions, ev)
		}
	}
	_ = s.snap.Revert()
	for _, i := range nodes {
		s.sim.SetGone(i, false)
	}
	s.sim.DropSince(mark)
	return t
}

// placeSome places the items that passed FitsAlone, next fit per
// destination order; the others and those that fit nowhere stay unplaced.
func (s *session) placeSome(items []removal.Item, fits []bool) {
	cursors := [2]int{}
	for k := range items {
		it := &items[k]
		if !fits[k] {
			continue
		}
		c := &cursors[0]
		if it.P.Order() == s.cpuOrder {
			c = &cursors[1]
		}
		*c = max(*c, it.P.Hint())
		it.Dest, _ = s.sim.Place(it.P, c)
	}
}

func (s *session) launchTotals(l Launch) limits.Totals {
	var t limits.Totals
	if l.Count > 0 {
		t.Add(limits.NodeTotals(s.snap.NodeGroup(l.Group).Template), l.Count)
	}
	return t
}

// cheapestLaunch finds the cheapest new nodes of one group that take every
// leftover pod and save at least MinSavings of before and MinSavingsPerPod
// for each of the evicted pods, within the group's maximum size and the
// cluster's maximums (old nodes still running). With no leftover the nodes
// simply go, if that pays for the evictions. Where a price is unknown
// (zero), only fewer nodes of the nodes' own single group count as cheaper.
func (s *session) cheapestLaunch(nodes []int32, before float64, evicted int, leftovers []*removal.Item) (Launch, float64, string, bool) {
	if len(leftovers) == 0 {
		if why := s.underpaid(before, evicted); why != "" {
			return Launch{}, 0, why, false
		}
		return Launch{}, 0, "", true
	}
	// ceiling is the most the new nodes may cost.
	ceiling := min(before*(1-s.opts.MinSavings), before-s.opts.MinSavingsPerPod*float64(evicted))
	classes := classesOf(leftovers)
	allSpot, priced, own := true, before > 0, s.nodes[nodes[0]].groupID()
	for _, i := range nodes {
		st := &s.nodes[i]
		allSpot = allSpot && st.group.Spot
		priced = priced && st.price > 0
		if st.groupID() != own {
			own = ""
		}
	}
	var best Launch
	bestPrice := math.Inf(1)
	var notes []string
	for _, g := range s.snap.NodeGroups() {
		var most int
		switch {
		case g.Template == nil || snapshot.Queued(g):
			// A queued group grows only through the cloud's queue.
			continue
		case g.Spot && !allSpot && !s.opts.SpotReplacements:
			continue
		case priced && g.PricePerHour > 0:
			// The most nodes that cost at most the ceiling, and strictly
			// less than before.
			most = int(math.Floor(ceiling/g.PricePerHour + 1e-9))
			if float64(most)*g.PricePerHour >= before-1e-9 {
				most--
			}
		case !priced && g.ID == own:
			most = len(nodes) - 1
		default:
			continue
		}
		if most <= 0 {
			continue
		}
		if head, limit := s.room.headroom(s, g); head < most {
			most = head
			notes = append(notes, headroomWhy(g, limit)+" reached")
		}
		if most <= 0 || !s.fitsEmpty(g, leftovers) {
			continue
		}
		tmpl, err := s.template(g)
		if err != nil {
			continue
		}
		est, err := estimator.Pack(s.snap, tmpl, classes, estimator.Options{MaxNodes: most})
		if err != nil || est.PodCount < len(leftovers) {
			continue
		}
		price := float64(est.NodeCount) * g.PricePerHour
		if price < bestPrice || (price == bestPrice && est.NodeCount < best.Count) {
			best, bestPrice = Launch{Group: g.ID, Count: est.NodeCount}, price
		}
	}
	if best.Count == 0 {
		why := fmt.Sprintf("no node group takes its %d pods for %.0f%% less than $%.2f/h (--consolidation-min-savings)",
			len(leftovers), 100*s.opts.MinSavings, before)
		if priced && s.opts.MinSavingsPerPod > 0 {
			why += fmt.Sprintf(" and $%.2f/h less for each of the %d pods evicted (--consolidation-min-savings-per-pod)",
				s.opts.MinSavingsPerPod, evicted)
		}
		if len(notes) > 0 {
			why += " within the limits: " + strings.Join(dedupe(notes), ", ")
		}
		return Launch{}, 0, why, false
	}
	return best, bestPrice, "", true
}

func dedupe(xs []string) []string {
	slices.Sort(xs)
	return slices.Compact(xs)
}

// fitsEmpty tells whether every leftover pod passes, on an empty node of
// g, the checks that depend on the node alone (resources, taints, node
// affinity, ports): a quick test that spares packing the groups that
// cannot take them (a GPU model the pods do not ask for, no GPUs at all).
func (s *session) fitsEmpty(g *snapshot.NodeGroup, leftovers []*removal.Item) bool {
	ni, ok := s.empties[g.ID]
	if !ok {
		probe := snapshot.New()
		n := g.Template.DeepCopy()
		n.Name = "template-" + g.ID
		if err := probe.AddNode(n); err == nil {
			ni = probe.Node(n.Name)
		}
		s.empties[g.ID] = ni
	}
	if ni == nil {
		return false
	}
	for _, it := range leftovers {
		if !it.P.Check.CheckNodeLocal(ni).Fits() {
			return false
		}
	}
	return true
}

// template is a group's template for packing, made once a pass.
func (s *session) template(g *snapshot.NodeGroup) (*estimator.Template, error) {
	if t := s.templates[g.ID]; t != nil {
		return t, nil
	}
	t, err := estimator.NewTemplate(g, s.in.DaemonSets)
	if err != nil {
		return nil, err
	}
	s.templates[g.ID] = t
	return t, nil
}

// classesOf makes each leftover pod a class of its own for packing: pods
// of one controller may still differ (a StatefulSet's pods bind volumes in
// different zones), and packing trusts a class's first pod for all.
func classesOf(items []*removal.Item) [][]*snapshot.PodInfo {
	out := make([][]*snapshot.PodInfo, len(items))
	for k, it := range items {
		out[k] = []*snapshot.PodInfo{it.P.Info()}
	}
	return out
}

// carry records the chosen replacement as a move carried out now.
func (s *session) carry(t *trial) {
	m := Move{Kind: t.kind(), Nodes: s.refs(t.nodes), Launch: t.launch, PriceBefore: t.before, PriceAfter: t.after,
		DaemonSetPods: t.ds}
	if t.launch.Count > 0 {
		m.Message = fmt.Sprintf("replace %d nodes by %d of %s: $%.2f/h instead of $%.2f/h", len(t.nodes),
			t.launch.Count, t.launch.Group, t.after, t.before)
	} else {
		m.Message = fmt.Sprintf("delete %d nodes together: their pods fit on other nodes; saves $%.2f/h", len(t.nodes), t.before)
	}
	pm := plannedMove{Move: m, lo: len(s.evictions)}
	for _, ev := range t.evictions {
		s.evictions = append(s.evictions, ev)
		if s.judge.Ctx.Budgets.Consume(ev.Pod) {
			pm.EvictOneByOne = true
		}
	}
	pm.hi = len(s.evictions)
	for _, i := range t.nodes {
		s.nodes[i].fate = moved
	}
	s.room.take(s, t.nodes, t.launch)
	s.moves = append(s.moves, pm)
}
