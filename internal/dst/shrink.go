package dst

import (
	"fmt"
	"strings"
)

// Shrink reduces a failing schedule to a smaller one that still breaks
// the same invariant: delta debugging over its steps (drop halves, then
// quarters, ... then single steps), each candidate run from scratch.
// runs bounds the runs spent; the smallest schedule found is returned
// with its result.
func Shrink(seed uint64, steps []Step, o Options, invariant string, runs int) ([]Step, Result) {
	fails := func(s []Step) (Result, bool) {
		r := Run(seed, s, o)
		for _, v := range r.Violations {
			if v.Invariant == invariant {
				return r, true
			}
		}
		return r, false
	}
	best, ok := fails(steps)
	if !ok {
		return steps, best
	}
	cur := steps[:best.Ran]
	for n := 2; len(cur) >= 2 && runs > 0; {
		chunk := (len(cur) + n - 1) / n
		reduced := false
		for start := 0; start < len(cur) && runs > 0; start += chunk {
			cand := append(append([]Step(nil), cur[:start]...), cur[min(start+chunk, len(cur)):]...)
			runs--
			if r, ok := fails(cand); ok {
				cur, best, reduced = cand[:r.Ran], r, true
				n = max(n-1, 2)
				break
			}
		}
		if !reduced {
			if chunk == 1 {
				break
			}
			n = min(2*n, len(cur))
		}
	}
	return cur, best
}

// ReplayTest prints a Go test that runs steps and expects no violation:
// kept in this package once the bug it found is fixed, it fails if the
// bug comes back.
func ReplayTest(name string, seed uint64, steps []Step, found Violation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "// %s replays a schedule (seed %d, shrunk) that broke %s:\n// %s\n", name, seed, found.Invariant,
		found.Detail)
	fmt.Fprintf(&b, "func %s(t *testing.T) {\n\tsteps := []Step{\n", name)
	for _, s := range steps {
		fmt.Fprintf(&b, "\t\t%s,\n", s.GoString())
	}
	fmt.Fprintf(&b, "\t}\n\tfor _, v := range Run(%d, steps, DefaultOptions()).Violations {\n\t\tt.Error(v)\n\t}\n}\n", seed)
	return b.String()
}

var (
	stepIdents = [...]string{"StepTick", "StepSchedule", "StepRegister", "StepLoseKubelet", "StepAddWorkload",
		"StepDeleteWorkload", "StepFinishPod", "StepProtectPod", "StepFault", "StepKill", "StepTakeover", "StepHoldWatch",
		"StepReleaseWatch", "StepKillAfterTaint", "StepTakeoverWhileDraining"}
	workloadIdents = [...]string{"WorkloadPlain", "WorkloadBudget", "WorkloadDoNotDisrupt", "WorkloadNotSafeToEvict",
		"WorkloadLocalStorage", "WorkloadUnreplicated", "WorkloadGraceful", "WorkloadSlowStop"}
	faultIdents = [...]string{"FaultConflict", "FaultServerError", "FaultTimeout", "FaultLostReply", "FaultCloudFail",
		"FaultCloudThrottle", "FaultCloudLate", "FaultCloudLostReply"}
)

// GoString is the step as a Go composite literal, with only the fields
// its kind reads.
func (s Step) GoString() string {
	f := []string{"Kind: " + stepIdents[s.Kind]}
	switch s.Kind {
	case StepTick:
		f = append(f, fmt.Sprintf("Dur: %d * time.Second", int(s.Dur.Seconds())))
	case StepAddWorkload:
		f = append(f, "Workload: "+workloadIdents[s.Workload], fmt.Sprintf("Replicas: %d", s.Replicas))
		if s.GPU {
			f = append(f, "GPU: true")
		}
	case StepFault:
		ff := []string{"Kind: " + faultIdents[s.Fault.Kind], fmt.Sprintf("Target: %q", s.Fault.Target),
			fmt.Sprintf("Count: %d", s.Fault.Count)}
		if s.Fault.Delay > 0 {
			ff = append(ff, fmt.Sprintf("Delay: %d * time.Second", int(s.Fault.Delay.Seconds())))
		}
		f = append(f, "Fault: Fault{"+strings.Join(ff, ", ")+"}", fmt.Sprintf("Pick: %d", s.Pick))
	case StepHoldWatch, StepReleaseWatch:
		f = append(f, fmt.Sprintf("Resource: %q", s.Resource))
	case StepSchedule, StepKill, StepTakeover, StepKillAfterTaint, StepTakeoverWhileDraining:
	default:
		f = append(f, fmt.Sprintf("Pick: %d", s.Pick))
	}
	return "{" + strings.Join(f, ", ") + "}"
}
