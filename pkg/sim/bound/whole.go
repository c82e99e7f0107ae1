package bound

import (
	"math"
	"sort"
)

// Whole nodes. When few pods run, the fractional programs price them at a
// share of the cheapest node per unit, while any policy must pay for at
// least one whole node. wholeNodes finds, for the pods running at an
// instant, the cheapest whole-node cover:
//
//	minimize   sum_s price_s·N_s
//	subject to sum_{s in S_k} N_s·cap_s >= D_k   for each component k
//	           N_s >= 0 integer
//
// The classes are split into components that share no shape (two classes
// are in the same component when some shape is eligible for both, directly
// or through other classes); S_k is the union of the shapes of component k
// and D_k the total request of its pods.
//
// Validity: pods of different components can never share a node, so a
// real placement's nodes split by component. Within a component, a real
// placement's N_s whole nodes hold every pod of the component, so their
// summed capacity covers D_k; letting any pod of the component use any of
// S_k, and its resources split across nodes, only adds placements. So the
// optimum is at most what any placement pays. The integer program is
// solved exactly by depth-first search, bounded with the fluid bound of
// what is left to cover (dual vertices of each suffix of the shapes).

// maxWholePods is the largest number of pods for which the whole-node
// cover is searched; above it, a node more or less than the fractional
// programs count is a small share of the rate.
const maxWholePods = 64

// maxWholeSteps stops a search that grows too large; the instant then keeps
// the fractional bound alone.
const maxWholeSteps = 200000

type component struct {
	classes []int
	shapes  []int
	// suffix[i] are the dual vertices of shapes[i:].
	suffix [][][3]float64
}

// components splits the classes with a shape into components that share no
// shape.
func components(shapes []Shape, elig [][]int) (comps []component, of []int) {
	parent := make([]int, len(shapes))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, e := range elig {
		for _, s := range e[min(1, len(e)):] {
			if a, b := find(e[0]), find(s); a != b {
				parent[b] = a
			}
		}
	}
	index := map[int]int{}
	of = make([]int, len(elig))
	for c, e := range elig {
		of[c] = -1
		if len(e) == 0 {
			continue
		}
		root := find(e[0])
		k, ok := index[root]
		if !ok {
			k = len(comps)
			index[root] = k
			comps = append(comps, component{})
		}
		of[c] = k
		comps[k].classes = append(comps[k].classes, c)
	}
	for s := range shapes {
		if k, ok := index[find(s)]; ok {
			comps[k].shapes = append(comps[k].shapes, s)
		}
	}
	for k := range comps {
		cp := &comps[k]
		// Dearer per node first: the search settles the few big choices
		// before the many small ones.
		sort.SliceStable(cp.shapes, func(i, j int) bool {
			return shapes[cp.shapes[i]].PricePerHour > shapes[cp.shapes[j]].PricePerHour
		})
		cp.suffix = make([][][3]float64, len(cp.shapes)+1)
		for i := range cp.shapes {
			var sub []Shape
			offered := [3]bool{}
			for _, s := range cp.shapes[i:] {
				sub = append(sub, shapes[s])
				for r, v := range shapes[s].Capacity.vec() {
					if v > eps {
						offered[r] = true
					}
				}
			}
			cp.suffix[i] = dualVertices(undominated(sub), offered)
		}
	}
	return comps, of
}

// wholeRate is the cheapest whole-node cover of the counts n, summed over
// the components; ok is false when a search was cut short or the state
// has too many pods.
func wholeRate(shapes []Shape, classes []Class, comps []component, of []int, n []int) (float64, bool) {
	total := 0
	demand := make([][3]float64, len(comps))
	for c, k := range n {
		if k == 0 || of[c] < 0 {
			continue
		}
		total += k
		v := classes[c].Pod.vec()
		for r := range v {
			demand[of[c]][r] += float64(k) * v[r]
		}
	}
	if total > maxWholePods {
		return 0, false
	}
	sum := 0.0
	for k := range comps {
		if demand[k] == ([3]float64{}) {
			continue
		}
		v, ok := comps[k].cover(shapes, demand[k])
		if !ok {
			return 0, false
		}
		sum += v
	}
	return sum, true
}

// cover solves the component's integer cover of d by depth-first search.
func (cp *component) cover(shapes []Shape, d [3]float64) (float64, bool) {
	best := math.Inf(1)
	steps := 0
	// Where a resource is demanded but not offered by the suffix, the
	// suffix cannot finish the cover.
	remainingRate := func(i int, d [3]float64) float64 {
		for r := range d {
			if d[r] > eps {
				offered := false
				for _, s := range cp.shapes[i:] {
					if shapes[s].Capacity.vec()[r] > eps {
						offered = true
						break
					}
				}
				if !offered {
					return math.Inf(1)
				}
			}
		}
		return rate(cp.suffix[i], d)
	}
	var dfs func(i int, cost float64, d [3]float64) bool
	dfs = func(i int, cost float64, d [3]float64) bool {
		steps++
		if steps > maxWholeSteps {
			return false
		}
		covered := d[0] <= eps && d[1] <= eps && d[2] <= eps
		if covered {
			best = min(best, cost)
			return true
		}
		if i == len(cp.shapes) || cost+remainingRate(i, d) >= best-1e-9 {
			return true
		}
		s := shapes[cp.shapes[i]]
		c := s.Capacity.vec()
		// More nodes of this shape than cover everything alone are useless.
		most := 0
		for r := range d {
			if d[r] > eps && c[r] > eps {
				most = max(most, int(math.Ceil(d[r]/c[r]-1e-9)))
			}
		}
		for k := most; k >= 0; k-- {
			var left [3]float64
			for r := range d {
				left[r] = max(0, d[r]-float64(k)*c[r])
			}
			if !dfs(i+1, cost+float64(k)*s.PricePerHour, left) {
				return false
			}
		}
		return true
	}
	if !dfs(0, 0, d) || math.IsInf(best, 1) {
		return 0, false
	}
	return best, true
}
