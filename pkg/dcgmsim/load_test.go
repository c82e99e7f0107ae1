package dcgmsim

import (
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/builder"
)

var t0 = time.Date(2026, 5, 7, 21, 0, 0, 0, time.UTC)

func TestLoadRampsLinearlyFromCurrentValue(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	b := NewLoadBook(clk)
	const pod = "default/p"
	if got := b.Util(pod); got != 0 {
		t.Fatalf("no load set: util %v, want 0", got)
	}
	b.Set(pod, Load{Util: 100, Ramp: 40 * time.Second})
	for _, step := range []struct {
		after time.Duration
		want  float64
	}{{0, 0}, {10 * time.Second, 25}, {30 * time.Second, 75}, {40 * time.Second, 100}, {time.Hour, 100}} {
		clk.SetTime(t0.Add(step.after))
		if got := b.Util(pod); got != step.want {
			t.Errorf("%v into the ramp: util %v, want %v", step.after, got, step.want)
		}
	}
	// A new target mid-ramp starts from where the ramp is.
	clk.SetTime(t0)
	b.Set(pod, Load{Util: 100, Ramp: 40 * time.Second})
	clk.SetTime(t0.Add(20 * time.Second)) // at 50
	b.Set(pod, Load{Util: 0, Ramp: 10 * time.Second})
	clk.SetTime(t0.Add(25 * time.Second))
	if got := b.Util(pod); got != 25 {
		t.Errorf("halfway down from 50: util %v, want 25", got)
	}
	pl, ok := b.Get(pod)
	if !ok || pl.Target != 0 || pl.RampLeft != "5s" || pl.Namespace != "default" || pl.Pod != "p" {
		t.Errorf("Get = %+v, %v; want target 0, 5s left", pl, ok)
	}
}

func TestLoadStepWithoutRamp(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	b := NewLoadBook(clk)
	b.Set("ns/p", Load{Util: 60})
	if got := b.Util("ns/p"); got != 60 {
		t.Errorf("util %v, want 60 at once", got)
	}
	b.Forget("ns/p")
	if got := b.Util("ns/p"); got != 0 {
		t.Errorf("forgotten pod: util %v, want 0", got)
	}
}

func TestObserveAnnotations(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	b := NewLoadBook(clk)
	pod := builder.Pod("p").Annotation(AnnotationUtil, "100").Annotation(AnnotationRamp, "30s").Build()
	if err := b.Observe(pod); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(t0.Add(15 * time.Second))
	if got := b.Util("default/p"); got != 50 {
		t.Fatalf("15s into a 30s ramp to 100: util %v, want 50", got)
	}

	// An update that leaves the annotations alone neither restarts the ramp
	// nor undoes a load set over HTTP since.
	pod = pod.DeepCopy()
	pod.Labels = map[string]string{"touched": "yes"}
	if err := b.Observe(pod); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(t0.Add(30 * time.Second))
	if got := b.Util("default/p"); got != 100 {
		t.Fatalf("end of ramp after an unrelated update: util %v, want 100", got)
	}
	b.Set("default/p", Load{Util: 10})
	if err := b.Observe(pod); err != nil {
		t.Fatal(err)
	}
	if got := b.Util("default/p"); got != 10 {
		t.Fatalf("after PUT and an unrelated update: util %v, want 10", got)
	}

	// A changed annotation wins over the PUT; a removed one idles the pod.
	pod.Annotations = map[string]string{AnnotationUtil: "70"}
	if err := b.Observe(pod); err != nil {
		t.Fatal(err)
	}
	if got := b.Util("default/p"); got != 70 {
		t.Fatalf("changed annotation: util %v, want 70", got)
	}
	pod.Annotations = nil
	if err := b.Observe(pod); err != nil {
		t.Fatal(err)
	}
	if got := b.Util("default/p"); got != 0 {
		t.Fatalf("removed annotation: util %v, want 0", got)
	}
}

func TestObserveRefusesBadAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name, util, ramp, want string
	}{
		{"not a number", "lots", "", `gpuscale.dev/simulated-gpu-util: not a number, got "lots"`},
		{"above 100", "150", "", "util: must be between 0 and 100, got 150"},
		{"negative", "-1", "", "util: must be between 0 and 100, got -1"},
		{"NaN", "NaN", "", "util: must be between 0 and 100, got NaN"},
		{"bad ramp", "50", "soon", `gpuscale.dev/simulated-gpu-util-ramp: not a duration, got "soon"`},
		{"negative ramp", "50", "-5s", "ramp: must not be negative, got -5s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewLoadBook(testingclock.NewFakePassiveClock(t0))
			b.Set("default/p", Load{Util: 20})
			pb := builder.Pod("p").Annotation(AnnotationUtil, tc.util)
			if tc.ramp != "" {
				pb.Annotation(AnnotationRamp, tc.ramp)
			}
			err := b.Observe(pb.Build())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "default/p") {
				t.Fatalf("Observe error %v, want one naming the pod and %q", err, tc.want)
			}
			if got := b.Util("default/p"); got != 20 {
				t.Errorf("load changed by a refused annotation: %v, want 20", got)
			}
		})
	}
}
