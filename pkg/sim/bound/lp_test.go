package bound

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	gonumlp "gonum.org/v1/gonum/optimize/convex/lp"
)

func TestLPSolvesTextbookProgram(t *testing.T) {
	// maximize 3x + 5y: x <= 4, 2y <= 12, 3x + 2y <= 18; optimum 36 at (2, 6).
	p := &lp{a: [][]float64{{1, 0}, {0, 2}, {3, 2}}, b: []float64{4, 12, 18}, c: []float64{3, 5}}
	y, z, err := p.solve()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(z-36) > 1e-9 || math.Abs(y[0]-2) > 1e-9 || math.Abs(y[1]-6) > 1e-9 {
		t.Errorf("got y %v, optimum %g; want (2, 6), 36", y, z)
	}
}

func TestLPDegenerateRows(t *testing.T) {
	// Rows with b = 0 tie the variables: u <= w1, u <= w2, w1 + w2 <= 2,
	// maximize u: u = w1 = w2 = 1.
	p := &lp{a: [][]float64{{1, -1, 0}, {1, 0, -1}, {0, 1, 1}}, b: []float64{0, 0, 2}, c: []float64{1, 0, 0}}
	_, z, err := p.solve()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(z-1) > 1e-9 {
		t.Errorf("optimum %g, want 1", z)
	}
}

func TestLPUnbounded(t *testing.T) {
	p := &lp{a: [][]float64{{1, -1}}, b: []float64{1}, c: []float64{0, 1}}
	if _, _, err := p.solve(); err == nil || !strings.Contains(err.Error(), "unbounded") {
		t.Errorf("got %v, want an unbounded program reported", err)
	}
}

func TestLPColumnInNoRow(t *testing.T) {
	// y2 appears in no row: with c2 = 0 it stays 0 and the rest solves
	// (maximize y1: y1 <= 3); with c2 > 0 the program is unbounded.
	p := &lp{a: [][]float64{{1, 0}}, b: []float64{3}, c: []float64{1, 0}}
	y, z, err := p.solve()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(z-3) > 1e-9 || math.Abs(y[0]-3) > 1e-9 || y[1] != 0 {
		t.Errorf("got y %v, optimum %g; want (3, 0), 3", y, z)
	}
	p.c[1] = 1
	if _, _, err := p.solve(); err == nil || !strings.Contains(err.Error(), "unbounded") {
		t.Errorf("got %v, want an unbounded program reported", err)
	}
}

// TestLPAgreesWithGonum solves random programs, many rows degenerate (b = 0)
// as in ComputePods, with both this solver and gonum's simplex method on
// the standard form, and compares the optima.
func TestLPAgreesWithGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	unbounded := 0
	for trial := 0; trial < 200; trial++ {
		m, n := 2+rng.IntN(12), 2+rng.IntN(10)
		p := &lp{c: make([]float64, n)}
		for j := range p.c {
			p.c[j] = rng.Float64()*4 - 1
		}
		for i := 0; i < m; i++ {
			row := make([]float64, n)
			for j := range row {
				if rng.IntN(3) > 0 {
					row[j] = math.Round((rng.Float64()*6-2)*4) / 4
				}
			}
			p.a = append(p.a, row)
			b := 0.0
			if rng.IntN(2) == 0 {
				b = float64(rng.IntN(10))
			}
			p.b = append(p.b, b)
		}
		for j := 0; j < n; j++ { // every column in some row
			p.a[j%m][j] += 1 + float64(rng.IntN(3))
		}
		y, z, err := p.solve()
		gz, gerr := gonumOptimum(p)
		if errors.Is(gerr, gonumlp.ErrUnbounded) {
			unbounded++
			if err == nil || !strings.Contains(err.Error(), "unbounded") {
				t.Errorf("trial %d: gonum finds the program unbounded, we got optimum %g, error %v", trial, z, err)
			}
			continue
		}
		if gerr != nil {
			t.Fatalf("trial %d: gonum: %v", trial, gerr)
		}
		if err != nil {
			t.Errorf("trial %d: %v; gonum's optimum %g", trial, err, gz)
			continue
		}
		if math.Abs(z-gz) > 1e-7*math.Max(1, math.Abs(gz)) {
			t.Errorf("trial %d: optimum %g, gonum's %g", trial, z, gz)
		}
		// y must be feasible and reach z.
		cy := 0.0
		for j := range y {
			if y[j] < -1e-9 {
				t.Errorf("trial %d: y[%d] = %g < 0", trial, j, y[j])
			}
			cy += p.c[j] * y[j]
		}
		for i, row := range p.a {
			ay := 0.0
			for j := range row {
				ay += row[j] * y[j]
			}
			if ay > p.b[i]+1e-7 {
				t.Errorf("trial %d: row %d: %g > %g", trial, i, ay, p.b[i])
			}
		}
		if math.Abs(cy-z) > 1e-7*math.Max(1, math.Abs(z)) {
			t.Errorf("trial %d: c·y = %g, reported optimum %g", trial, cy, z)
		}
	}
	if unbounded == 0 || unbounded == 200 {
		t.Errorf("%d of 200 programs unbounded: the draw does not exercise both outcomes", unbounded)
	}
}

// gonumOptimum solves p with gonum: minimize -c·y subject to A·y + s = b,
// starting from the slack basis.
func gonumOptimum(p *lp) (float64, error) {
	m, n := len(p.a), len(p.c)
	a := mat.NewDense(m, n+m, nil)
	for i, row := range p.a {
		for j, v := range row {
			a.Set(i, j, v)
		}
		a.Set(i, n+i, 1)
	}
	c := make([]float64, n+m)
	basis := make([]int, m)
	for j, v := range p.c {
		c[j] = -v
	}
	for i := range basis {
		basis[i] = n + i
	}
	opt, _, err := gonumlp.Simplex(c, a, append([]float64(nil), p.b...), 1e-10, basis)
	return -opt, err
}
