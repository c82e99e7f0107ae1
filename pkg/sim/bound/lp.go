package bound

import "fmt"

// lp is a linear program in the form
//
//	maximize c·y  subject to  A·y <= b,  y >= 0,  with b >= 0,
//
// so y = 0 is feasible and the simplex method needs no first phase. It is
// solved on Tucker's condensed tableau: one row per constraint, one column
// per variable not in the basis, slacks kept implicit.
//
// gonum's optimize/convex/lp.Simplex solves the same programs (the tests
// check the two agree) but refactorizes the basis at every pivot, O(m³)
// a pivot against O(m·n) here; on the programs ComputePods builds (about
// 200 rows, most of them degenerate) it takes seconds where this takes
// milliseconds.
type lp struct {
	a [][]float64
	b []float64
	c []float64
}

// maxPivots stops a solve that does not converge; Bland's rule makes that
// impossible in exact arithmetic, so it guards against rounding only.
const maxPivots = 200000

// solve returns the optimal y and the optimum. Bland's rule (the entering
// and leaving variables of smallest label), taken after a run of degenerate
// pivots, keeps the many degenerate rows (b = 0) from cycling.
func (p *lp) solve() ([]float64, float64, error) {
	m, n := len(p.a), len(p.c)
	for i := range p.a {
		if len(p.a[i]) != n {
			return nil, 0, fmt.Errorf("linear program row %d: %d coefficients, want %d", i, len(p.a[i]), n)
		}
		if p.b[i] < 0 {
			return nil, 0, fmt.Errorf("linear program row %d: right-hand side must not be negative, got %g", i, p.b[i])
		}
	}
	t := make([][]float64, m)
	rhs := append([]float64(nil), p.b...)
	for i := range t {
		t[i] = append([]float64(nil), p.a[i]...)
	}
	d := append([]float64(nil), p.c...) // reduced costs of the non-basic columns
	z := 0.0
	// Labels: 0..n-1 the variables y, n..n+m-1 the slacks.
	col := make([]int, n)
	for j := range col {
		col[j] = j
	}
	row := make([]int, m)
	for i := range row {
		row[i] = n + i
	}
	const tol, pivotTol = 1e-10, 1e-9
	degenerate, bland := 0, false
	for it := 0; ; it++ {
		if it == maxPivots {
			return nil, 0, fmt.Errorf("linear program of %d rows and %d columns: no optimum after %d pivots", m, n, maxPivots)
		}
		// Dantzig's rule (the largest reduced cost) while the objective
		// moves; Bland's after a run of degenerate pivots, until it moves.
		k := -1
		for j := range d {
			if d[j] <= tol {
				continue
			}
			if k < 0 || (bland && col[j] < col[k]) || (!bland && d[j] > d[k]) {
				k = j
			}
		}
		if k < 0 {
			break
		}
		r := -1
		best := 0.0
		for i := range t {
			if t[i][k] <= pivotTol {
				continue
			}
			ratio := max(rhs[i], 0) / t[i][k]
			if r < 0 || ratio < best-tol || (ratio <= best+tol && row[i] < row[r]) {
				r, best = i, ratio
			}
		}
		if r < 0 {
			return nil, 0, fmt.Errorf("linear program of %d rows and %d columns is unbounded", m, n)
		}
		z += d[k] * rhs[r] / t[r][k]
		pivot(t, rhs, d, r, k)
		if rhs[r] > tol {
			degenerate = 0
		} else {
			degenerate++
		}
		bland = degenerate > 50
		row[r], col[k] = col[k], row[r]
	}
	y := make([]float64, n)
	for i, l := range row {
		if l < n {
			y[l] = rhs[i]
		}
	}
	return y, z, nil
}

// pivot exchanges row r's basic variable with column k's on the condensed
// tableau t, its right-hand side rhs and reduced costs d.
func pivot(t [][]float64, rhs, d []float64, r, k int) {
	piv := t[r][k]
	pr := t[r]
	for j := range pr {
		if j != k {
			pr[j] /= piv
		}
	}
	pr[k] = 1 / piv
	rhs[r] /= piv
	for i := range t {
		if i == r {
			continue
		}
		f := t[i][k]
		if f == 0 {
			continue
		}
		ti := t[i]
		for j := range ti {
			if j != k {
				ti[j] -= f * pr[j]
			}
		}
		ti[k] = -f * pr[k]
		rhs[i] -= f * rhs[r]
		if rhs[i] < 0 && rhs[i] > -1e-12 {
			rhs[i] = 0
		}
	}
	f := d[k]
	for j := range d {
		if j != k {
			d[j] -= f * pr[j]
		}
	}
	d[k] = -f * pr[k]
}
