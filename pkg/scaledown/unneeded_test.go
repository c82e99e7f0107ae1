package scaledown_test

import (
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/scaledown"
)

func TestUnneededTracker(t *testing.T) {
	tr := scaledown.NewUnneededTracker()
	since := func(name string) (time.Duration, bool) {
		s, ok := tr.Since(name)
		return s.Sub(t0), ok
	}
	tr.Update(t0, []string{"a", "b"})
	if d, ok := since("a"); !ok || d != 0 {
		t.Fatalf("a: since %s %v, want t0", d, ok)
	}
	tr.Update(t0.Add(time.Minute), []string{"a", "c"})
	if d, ok := since("a"); !ok || d != 0 {
		t.Errorf("a stays unneeded and keeps its start, got %s %v", d, ok)
	}
	if _, ok := since("b"); ok {
		t.Error("b became needed and must be forgotten")
	}
	if d, ok := since("c"); !ok || d != time.Minute {
		t.Errorf("c starts its clock at its first loop, got %s %v", d, ok)
	}
	tr.Update(t0.Add(2*time.Minute), []string{"b"})
	if d, _ := since("b"); d != 2*time.Minute || tr.Len() != 1 {
		t.Errorf("b unneeded again starts over: since +%s, %d tracked", d, tr.Len())
	}
	tr.Clear()
	if tr.Len() != 0 {
		t.Error("Clear must forget every node")
	}
	tr.Update(t0, nil)
	if tr.Len() != 0 {
		t.Error("an empty update leaves nothing tracked")
	}
}
