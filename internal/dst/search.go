package dst

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
)

// SearchOptions bound a search.
type SearchOptions struct {
	// FirstSeed and Schedules: seeds FirstSeed, FirstSeed+1, ...
	FirstSeed uint64
	Schedules int
	// Steps per schedule (before the quiet tail).
	Steps int
	// Time bounds the search in real time; 0 means none.
	Time time.Duration
	// ShrinkRuns bounds the runs spent shrinking each finding.
	ShrinkRuns int
	// StopAtFirst ends the search at the first finding, or, with StopOn,
	// at the first of an invariant StopOn matches (a planted bug may break
	// another one first).
	StopAtFirst bool
	StopOn      *regexp.Regexp
	Run         Options
}

// Report is what a search did.
type Report struct {
	Schedules, Steps, Checks int
	Faults                   map[FaultKind]int
	Findings                 []Finding
	Wall                     time.Duration
}

// Finding is a failing schedule, shrunk, with its replay test.
type Finding struct {
	Seed      uint64
	Violation Violation
	// Steps is the shrunk schedule; Replay a Go test that runs it.
	Steps  []Step
	Replay string
	// After is how long the search had run when it found it.
	After time.Duration
}

// Search runs schedules drawn from consecutive seeds and shrinks what
// fails. One finding per invariant is shrunk; later ones of the same
// invariant are counted in the report but not shrunk again.
func Search(o SearchOptions) Report {
	start := time.Now()
	rep := Report{Faults: map[FaultKind]int{}}
	shrunk := map[string]bool{}
	for i := range o.Schedules {
		if o.Time > 0 && time.Since(start) > o.Time {
			break
		}
		seed := o.FirstSeed + uint64(i)
		steps := Generate(seed, o.Steps)
		res := Run(seed, steps, o.Run)
		rep.Schedules++
		rep.Steps += len(res.Trace)
		rep.Checks += res.Checks
		for k, v := range res.Faults {
			rep.Faults[k] += v
		}
		if !res.Failed() {
			continue
		}
		v := res.Violations[0]
		f := Finding{Seed: seed, Violation: v, Steps: steps[:res.Ran], After: time.Since(start)}
		if !shrunk[v.Invariant] {
			shrunk[v.Invariant] = true
			small, r := Shrink(seed, steps, o.Run, v.Invariant, o.ShrinkRuns)
			if len(r.Violations) > 0 {
				f.Violation = r.Violations[0]
			}
			f.Steps = small
			f.Replay = ReplayTest(fmt.Sprintf("TestReplaySeed%d", seed), seed, small, f.Violation)
		}
		rep.Findings = append(rep.Findings, f)
		if o.StopAtFirst && (o.StopOn == nil || o.StopOn.MatchString(v.Invariant)) {
			break
		}
	}
	rep.Wall = time.Since(start)
	return rep
}

// Print writes the report for people.
func (r Report) Print(w io.Writer) {
	rate := float64(r.Schedules) / r.Wall.Seconds()
	fmt.Fprintf(w, "schedules explored: %d (%.2f/s)\nsteps: %d\ninvariant checks: %d\nwall time: %s\n",
		r.Schedules, rate, r.Steps, r.Checks, r.Wall.Round(time.Millisecond))
	var kinds []string
	total := 0
	for k, v := range r.Faults {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, v))
		total += v
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, "faults injected: %d (%s)\n", total, strings.Join(kinds, " "))
	fmt.Fprintf(w, "findings: %d\n", len(r.Findings))
	for _, f := range r.Findings {
		fmt.Fprintf(w, "- seed %d after %s: %s\n", f.Seed, f.After.Round(time.Millisecond), f.Violation)
	}
	for _, f := range r.Findings {
		if f.Replay != "" {
			fmt.Fprintf(w, "\n%s", f.Replay)
		}
	}
}
