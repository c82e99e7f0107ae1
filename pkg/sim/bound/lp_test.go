package bound

import (
	"math"
	"strings"
	"testing"
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
