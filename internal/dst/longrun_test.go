package dst

import (
	"flag"
	"os"
	"regexp"
	"testing"
)

// The long search runs only when asked: make dst, or
//
//	go test ./internal/dst -run TestSearch -dst.schedules=1000
var (
	searchSchedules = flag.Int("dst.schedules", 0, "schedules to explore in TestSearch (0 skips it)")
	searchSeed      = flag.Uint64("dst.seed", 1, "first seed of TestSearch")
	searchSteps     = flag.Int("dst.steps", 60, "steps per schedule, before the quiet tail")
	searchTime      = flag.Duration("dst.time", 0, "stop TestSearch after this long (0: no limit)")
	searchShrink    = flag.Int("dst.shrink-runs", 200, "runs spent shrinking each finding")
	searchFirst     = flag.Bool("dst.first", false, "stop TestSearch at the first finding")
	searchFirstOf   = flag.String("dst.first-of", "", "with -dst.first: stop at the first finding of an invariant this matches")
)

// TestSearch explores schedules and prints the report; it fails on any
// finding, each shrunk and printed as a replay test.
func TestSearch(t *testing.T) {
	if *searchSchedules == 0 {
		t.Skip("the long search runs with -dst.schedules=N (make dst)")
	}
	o := SearchOptions{FirstSeed: *searchSeed, Schedules: *searchSchedules, Steps: *searchSteps,
		Time: *searchTime, ShrinkRuns: *searchShrink, StopAtFirst: *searchFirst, Run: DefaultOptions()}
	if *searchFirstOf != "" {
		re, err := regexp.Compile(*searchFirstOf)
		if err != nil {
			t.Fatalf("-dst.first-of %q: %v", *searchFirstOf, err)
		}
		o.StopOn = re
	}
	rep := Search(o)
	rep.Print(os.Stdout)
	if len(rep.Findings) > 0 {
		t.Errorf("%d finding(s)", len(rep.Findings))
	}
}
