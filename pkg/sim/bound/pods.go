package bound

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Class is a kind of pod: what one pod requests and the node shapes it may
// run on.
type Class struct {
	Name string
	// Pod is one pod's request.
	Pod Amount
	// Shapes are the indices, into the shapes passed with the class, of
	// the shapes whose nodes the pod may run on (its tolerations, node
	// selector and affinity allow them). Shapes the pod does not fit in
	// are left out whether listed or not.
	Shapes []int
}

// PodChange is a change of the number of pods of a class at a point of time.
type PodChange struct {
	At    time.Duration
	Class int
	Delta int
}

// PodOptions tune ComputePods.
type PodOptions struct {
	// Solves is how many distinct demands have their linear program solved
	// exactly, the longest-lasting first (default 64); a negative value
	// solves every one. The others get the best of the solutions found,
	// which stays a lower bound (see ComputePods).
	Solves int
	// Fractional leaves out the whole-node cover (whole.go): only the
	// fractional programs count.
	Fractional bool
}

const defaultSolves = 64

// ComputePods integrates, from 0 to end, a cost rate no policy can beat
// for the pods running at each instant: the largest of the rate of
// Compute (the demand's resources packed as one fluid), the cheapest
// whole-node cover of whole.go (unless o.Fractional) and the optimum of
// the linear program
//
//	minimize   sum_s price_s·x_s
//	subject to sum_{s in E_c} f_cs        = n_c              for each class c
//	           sum_c pod_c[r]·f_cs       <= cap_s[r]·x_s     for each shape s, resource r
//	           f, x >= 0
//
// where n_c pods of class c run, E_c are the shapes class c may run on and
// fits in, x_s counts nodes of shape s and f_cs pods of class c on them.
//
// Validity: take any placement a real policy has at that instant, N_s
// whole nodes of shape s, each pod on one node of a shape it may run on
// and fits in, no node over its capacity. Setting x_s = N_s and f_cs to the
// number of class-c pods on shape-s nodes satisfies every constraint (the
// capacity rows are the per-node limits summed over the nodes of a shape),
// so the optimum is at most what that policy pays per hour. Whole nodes,
// each pod's resources staying together on one node, taints and selectors
// are what make this tighter than Compute, which lets a pod's cpu sit on
// one shape and its GPU on another and any demand use any shape.
//
// The program is solved through its dual
//
//	maximize   sum_c n_c·u_c
//	subject to u_c <= pod_c·w_s          for each c and s in E_c
//	           cap_s·w_s <= price_s      for each shape s
//	           w >= 0,
//
// whose feasible region does not depend on n: any w found for one demand,
// with u_c = min over E_c of pod_c·w_s, is feasible for every demand, so by
// weak duality sum_c n_c·u_c is a lower bound at every instant. Demands
// not solved exactly get the best such bound over the w found (exact where
// the optimal w of another demand is optimal for it too).
func ComputePods(shapes []Shape, classes []Class, changes []PodChange, end time.Duration, o PodOptions) (Result, error) {
	var res Result
	offered := [3]bool{}
	for _, s := range shapes {
		if s.PricePerHour < 0 {
			return res, fmt.Errorf("shape %s: price must not be negative, got %g", s.Name, s.PricePerHour)
		}
		for i, v := range s.Capacity.vec() {
			if v > eps {
				offered[i] = true
			}
		}
	}
	elig := make([][]int, len(classes))
	for c, cl := range classes {
		for _, s := range cl.Shapes {
			if s < 0 || s >= len(shapes) {
				return res, fmt.Errorf("class %s: shape index %d out of range [0, %d)", cl.Name, s, len(shapes))
			}
			if fits(cl.Pod, shapes[s].Capacity) {
				elig[c] = append(elig[c], s)
			}
		}
		sort.Ints(elig[c])
		elig[c] = compactInts(elig[c])
	}
	dropDominated(shapes, elig)
	for _, ch := range changes {
		if ch.Class < 0 || ch.Class >= len(classes) {
			return res, fmt.Errorf("pod change at %v: class index %d out of range [0, %d)", ch.At, ch.Class, len(classes))
		}
	}
	sorted := append([]PodChange(nil), changes...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].At < sorted[j].At })

	// The intervals of constant demand, each with its counts.
	type interval struct {
		from, to time.Duration
		key      string
	}
	var intervals []interval
	states := map[string][]int{}
	counts := make([]int, len(classes))
	var last time.Duration
	emit := func(to time.Duration) {
		to = min(to, end)
		if to <= last {
			return
		}
		k := countsKey(counts)
		if _, ok := states[k]; !ok {
			states[k] = append([]int(nil), counts...)
		}
		intervals = append(intervals, interval{last, to, k})
		last = to
	}
	for _, ch := range sorted {
		emit(ch.At)
		counts[ch.Class] += ch.Delta
		if counts[ch.Class] < 0 {
			return res, fmt.Errorf("class %s: %d pods at %v", classes[ch.Class].Name, counts[ch.Class], ch.At)
		}
	}
	emit(end)

	unserved := map[string]bool{}
	vertices := dualVertices(undominated(shapes), offered)
	aggRate := func(n []int) float64 {
		var d [3]float64
		for c, k := range n {
			if k == 0 || len(elig[c]) == 0 {
				continue
			}
			v := classes[c].Pod.vec()
			for i := range d {
				if offered[i] {
					d[i] += float64(k) * v[i]
				}
			}
		}
		return rate(vertices, d)
	}

	// Solve the longest-lasting demands exactly and keep their duals.
	weight := map[string]time.Duration{}
	for _, iv := range intervals {
		weight[iv.key] += iv.to - iv.from
	}
	keys := make([]string, 0, len(states))
	for k := range states {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if weight[keys[i]] != weight[keys[j]] {
			return weight[keys[i]] > weight[keys[j]]
		}
		return keys[i] < keys[j]
	})
	solves := o.Solves
	if solves == 0 {
		solves = defaultSolves
	}
	if solves > 0 && solves < len(keys) {
		keys = keys[:solves]
	}
	var duals [][][3]float64 // per dual, w per shape
	for _, k := range keys {
		w, err := solvePods(shapes, classes, elig, states[k], unserved)
		if err != nil {
			return res, err
		}
		if w != nil {
			duals = append(duals, w)
		}
	}
	// u[d][c]: class c's price under dual d.
	u := make([][]float64, len(duals))
	for d, w := range duals {
		u[d] = make([]float64, len(classes))
		for c := range classes {
			u[d][c] = classPrice(classes[c].Pod, elig[c], w)
		}
	}
	comps, of := components(shapes, elig)
	whole := map[string]float64{}
	for _, iv := range intervals {
		n := states[iv.key]
		best := aggRate(n)
		w, ok := whole[iv.key]
		if !ok && !o.Fractional {
			w, _ = wholeRate(shapes, classes, comps, of, n)
			whole[iv.key] = w
		}
		best = max(best, w)
		for d := range duals {
			v := 0.0
			for c, k := range n {
				if k > 0 {
					v += float64(k) * u[d][c]
				}
			}
			best = max(best, v)
		}
		hours := (iv.to - iv.from).Hours()
		res.Cost += best * hours
		for c, k := range n {
			if k == 0 {
				continue
			}
			if len(elig[c]) == 0 {
				unserved[classes[c].Name] = true
				continue
			}
			res.GPUHours += float64(k) * classes[c].Pod.GPUs * hours
		}
	}
	for name := range unserved {
		res.Unserved = append(res.Unserved, name)
	}
	sort.Strings(res.Unserved)
	return res, nil
}

// solvePods solves the dual program for the counts n and returns its w per
// shape; nil when no class with pods can run anywhere. Classes with pods
// and no shape are recorded in unserved and left out.
func solvePods(shapes []Shape, classes []Class, elig [][]int, n []int, unserved map[string]bool) ([][3]float64, error) {
	var active []int
	used := map[int]bool{}
	for c, k := range n {
		if k == 0 {
			continue
		}
		if len(elig[c]) == 0 {
			unserved[classes[c].Name] = true
			continue
		}
		active = append(active, c)
		for _, s := range elig[c] {
			used[s] = true
		}
	}
	if len(active) == 0 {
		return nil, nil
	}
	// Columns: u of each active class, then w of each used shape and
	// resource it offers (a resource a shape lacks has w = 0: no class
	// that fits the shape requests it).
	type wcol struct{ s, r int }
	var wcols []wcol
	wIndex := map[wcol]int{}
	usedShapes := make([]int, 0, len(used))
	for s := range used {
		usedShapes = append(usedShapes, s)
	}
	sort.Ints(usedShapes)
	for _, s := range usedShapes {
		for r, v := range shapes[s].Capacity.vec() {
			if v > eps {
				wIndex[wcol{s, r}] = len(active) + len(wcols)
				wcols = append(wcols, wcol{s, r})
			}
		}
	}
	cols := len(active) + len(wcols)
	p := &lp{c: make([]float64, cols)}
	for i, c := range active {
		p.c[i] = float64(n[c])
		pod := classes[c].Pod.vec()
		for _, s := range elig[c] {
			a := make([]float64, cols)
			a[i] = 1
			for r, v := range pod {
				if j, ok := wIndex[wcol{s, r}]; ok {
					a[j] = -v
				}
			}
			p.a = append(p.a, a)
			p.b = append(p.b, 0)
		}
	}
	for _, s := range usedShapes {
		a := make([]float64, cols)
		for r, v := range shapes[s].Capacity.vec() {
			if j, ok := wIndex[wcol{s, r}]; ok {
				a[j] = v
			}
		}
		p.a = append(p.a, a)
		p.b = append(p.b, shapes[s].PricePerHour)
	}
	y, _, err := p.solve()
	if err != nil {
		return nil, err
	}
	w := make([][3]float64, len(shapes))
	for k, wc := range wcols {
		w[wc.s][wc.r] = max(y[len(active)+k], 0)
	}
	// Rounding must not make w infeasible: scale a shape's w down to its
	// price where it went over.
	for s := range shapes {
		c := shapes[s].Capacity.vec()
		v := c[0]*w[s][0] + c[1]*w[s][1] + c[2]*w[s][2]
		if v > shapes[s].PricePerHour && v > 0 {
			f := shapes[s].PricePerHour / v
			for r := range w[s] {
				w[s][r] *= f
			}
		}
	}
	return w, nil
}

// dropDominated takes out of the eligible shapes of every class each shape
// another one beats outright: at most the price, at least the capacity of
// every resource, and eligible for every class the first is. A node of the
// first can always be swapped for a node of the other at no more cost,
// whole or fractional, so neither program's optimum changes; among shapes
// alike in all three the first is kept. The programs grow about with the
// cube of the shapes they are given, and clusters of hundreds of node
// groups (zones, spot and on-demand copies of a few instance types) have
// few shapes that no other beats.
func dropDominated(shapes []Shape, elig [][]int) {
	classesOf := make([][]int, len(shapes)) // the classes each shape may take, ascending
	for c, e := range elig {
		for _, s := range e {
			classesOf[s] = append(classesOf[s], c)
		}
	}
	beats := func(t, s int) bool {
		a, b := &shapes[t], &shapes[s]
		if a.PricePerHour > b.PricePerHour {
			return false
		}
		ca, cb := a.Capacity.vec(), b.Capacity.vec()
		for r := range ca {
			if ca[r] < cb[r] {
				return false
			}
		}
		return subset(classesOf[s], classesOf[t])
	}
	gone := make([]bool, len(shapes))
	for s := range shapes {
		if len(classesOf[s]) == 0 {
			continue
		}
		for t := range shapes {
			if t != s && !gone[t] && len(classesOf[t]) > 0 && beats(t, s) && (!beats(s, t) || t < s) {
				gone[s] = true
				break
			}
		}
	}
	for c, e := range elig {
		kept := e[:0]
		for _, s := range e {
			if !gone[s] {
				kept = append(kept, s)
			}
		}
		elig[c] = kept
	}
}

// subset tells whether every element of the ascending list a is in the
// ascending list b.
func subset(a, b []int) bool {
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
	}
	return true
}

// classPrice is u_c: the cheapest price of one pod over its shapes.
func classPrice(pod Amount, elig []int, w [][3]float64) float64 {
	if len(elig) == 0 {
		return 0
	}
	v := pod.vec()
	best := -1.0
	for _, s := range elig {
		p := v[0]*w[s][0] + v[1]*w[s][1] + v[2]*w[s][2]
		if best < 0 || p < best {
			best = p
		}
	}
	return best
}

func fits(pod, capacity Amount) bool {
	p, c := pod.vec(), capacity.vec()
	for i := range p {
		if p[i] > c[i]+eps {
			return false
		}
	}
	return true
}

func compactInts(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func countsKey(n []int) string {
	var b strings.Builder
	for i, k := range n {
		if k == 0 {
			continue
		}
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(k))
		b.WriteByte(',')
	}
	return b.String()
}
