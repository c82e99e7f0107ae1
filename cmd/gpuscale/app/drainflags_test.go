package app

import (
	"strings"
	"testing"
	"time"
)

// The drain-rule flags of upstream's drainability rules reach the core, and
// bad values are refused naming the flag.
func TestDrainRuleFlags(t *testing.T) {
	o, err := parse(t, "--blocking-system-pod-distruption-timeout=30m", "--min-replica-count=2").Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.ScaleDown.BlockingSystemPodDisruptionTimeout != 30*time.Minute || o.ScaleDown.MinReplicaCount != 2 {
		t.Errorf("scale-down options %+v, want the system pod timeout 30m and min replica count 2", o.ScaleDown)
	}
	_, err = parse(t, "--blocking-system-pod-distruption-timeout=-1m", "--min-replica-count=-3").Options()
	for _, want := range []string{"--blocking-system-pod-distruption-timeout: must not be negative, got -1m0s",
		"--min-replica-count: must not be negative, got -3"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
}
