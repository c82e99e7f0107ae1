package autoscalerflags_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/autoscalerflags"
)

// The drain-rule flags of upstream's drainability rules reach the core, and
// bad values are refused naming the flag.
func TestDrainRuleFlags(t *testing.T) {
	parse := func(settings string) (autoscalerflags.Decision, error) {
		s, err := autoscalerflags.ParseSettings(settings)
		if err != nil {
			return autoscalerflags.Decision{}, err
		}
		return autoscalerflags.Parse(s)
	}
	d, err := parse("blocking-system-pod-distruption-timeout=30m,min-replica-count=2")
	if err != nil {
		t.Fatal(err)
	}
	if o := d.Autoscaler.ScaleDown; o.BlockingSystemPodDisruptionTimeout != 30*time.Minute || o.MinReplicaCount != 2 {
		t.Errorf("scale-down options %+v, want the system pod timeout 30m and min replica count 2", o)
	}
	def, err := parse("")
	if err != nil {
		t.Fatal(err)
	}
	if o := def.Autoscaler.ScaleDown; o.BlockingSystemPodDisruptionTimeout != time.Hour || o.MinReplicaCount != 0 {
		t.Errorf("defaults %s and %d, want upstream's 1h and 0", o.BlockingSystemPodDisruptionTimeout, o.MinReplicaCount)
	}
	_, err = parse("blocking-system-pod-distruption-timeout=-1m,min-replica-count=-3")
	for _, want := range []string{"--blocking-system-pod-distruption-timeout: must not be negative, got -1m0s",
		"--min-replica-count: must not be negative, got -3"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
}
