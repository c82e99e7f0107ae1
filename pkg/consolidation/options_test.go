package consolidation_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/consolidation"
)

func TestValidate(t *testing.T) {
	if d := consolidation.DefaultOptions(); d.Validate() != nil {
		err := d.Validate()
		t.Fatalf("defaults: %v", err)
	}
	o := consolidation.DefaultOptions()
	o.StableTime = -time.Second
	o.MinSavings = 1
	o.MaxBatch = 0
	o.MinSavingsPerPod = -0.5
	err := o.Validate()
	for _, want := range []string{"MinSavingsPerPod (--consolidation-min-savings-per-pod): must be at least 0 and at most 1000, got -0.5", "StableTime (--consolidation-stable-time): must not be negative, got -1s",
		"MinSavings (--consolidation-min-savings): must be at least 0 and below 1, got 1",
		"MaxBatch (--consolidation-max-batch): must be at least 1, got 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
	if _, err := consolidation.NewPlanner(o); err == nil {
		t.Error("NewPlanner accepted bad options")
	}
}
