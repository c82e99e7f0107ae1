package engine

import (
	"testing"
	"time"
)

// GPU-hours of many GPUs are summed without wrapping: a billion GPUs for
// an hour and a half is 1.5e9 GPU-hours, not a negative number.
func TestExactHoursOfManyGPUs(t *testing.T) {
	var x exactHours
	x.add(1_000_000_000, 90*time.Minute)
	x.add(3, 20*time.Minute)
	if got, want := x.hours(), 1.5e9+1; got != want {
		t.Errorf("hours = %v, want %v", got, want)
	}
}
