package dst

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var plantedOnly = flag.String("dst.planted", "", "TestPlantedBugsAreFound: only the planted bugs whose name matches")

var plantedTime = flag.Duration("dst.planted-time", 0, "TestPlantedBugsAreFound: search each planted bug this long (0 skips the test)")

// plantedBug is a production file with one safety check broken, by
// string replacement, so that the search can show it finds the bug;
// production code carries no switch for it.
type plantedBug struct {
	name string
	// edits are replacements in files, paths relative to the module root.
	edits []edit
	// invariants are those the bug should break (any one will do).
	invariants []string
}

type edit struct {
	file, old, new string
}

var plantedBugs = []plantedBug{
	{name: "drain trusts the plan's pod list (no re-check, no last look)",
		edits: []edit{
			{"pkg/controller/removal.go", "c, err := a.recheck(ctx, w.rm)", "c, err := planOnly(w.rm), error(nil)"},
			{"pkg/controller/removal.go", "why, err := a.lastLook(ctx, rm)", "why, err := \"\", error(nil)"},
			{"pkg/controller/removal.go", "func removalMessage(", `func planOnly(rm disruption.Removal) podCheck {
	var c podCheck
	for _, m := range rm.Evict {
		c.evict = append(c.evict, m.Pod)
	}
	return c
}

func removalMessage(`},
		},
		invariants: []string{"NoPodLostWithItsNode", "NoUnmovablePodDisrupted"}},
	{name: "budgets skipped: the planner ignores them and the drain deletes what one refuses",
		edits: []edit{
			{"pkg/scaledown/drain/pdb.go", "b := c.Budgets.Blocking(pod)", "b := c.Budgets.Blocking(pod)\n\tb = nil"},
			{"pkg/controller/drain.go", "case apierrors.IsTooManyRequests(err):",
				"case apierrors.IsTooManyRequests(err):\n\t\t\treturn c.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})"},
		},
		invariants: []string{"PodsLeaveOnlyByEvictionOrCompletion"}},
	{name: "terminating pods not waited for (a fixed bug, reverted)",
		edits: []edit{
			{"pkg/controller/recheck.go", "out.await = append(out.await, p)", "_ = p"},
		},
		invariants: []string{"NoPodLostWithItsNode"}},
	{name: "a conflicting eviction taken for a replaced pod (a fixed bug, reverted)",
		edits: []edit{
			{"pkg/controller/drain.go", "case apierrors.IsConflict(err):", "case apierrors.IsConflict(err):\n\t\t\treturn nil"},
		},
		invariants: []string{"Liveness"}},
	{name: "a drain keeps acting after the Lease is lost",
		edits: []edit{
			{"pkg/controller/removal.go", "ctx, cancel := withClockTimeout(lead, a.clock, a.drainTimeout(grace))",
				"ctx, cancel := withClockTimeout(context.WithoutCancel(lead), a.clock, a.drainTimeout(grace))"},
		},
		invariants: []string{"SingleActingLeader"}},
	{name: "nodes on their way not counted by scale-up",
		edits: []edit{
			{"pkg/scaleup/planner.go", "if err := r.addUpcoming(); err != nil {", "if err := error(nil); err != nil {"},
		},
		// The limits count upcoming nodes the same way: whichever the
		// schedule reaches first.
		invariants: []string{"ScaleUpWithinNeed", "LimitsRespected"}},
	{name: "a failed scale-up retried at once (the first order may have gone through)",
		edits: []edit{
			{"pkg/controller/actuator.go", "if err := a.cp.IncreaseSize(ctx, su.Group, su.Delta); err != nil {",
				"err := a.cp.IncreaseSize(ctx, su.Group, su.Delta)\n\tif err != nil {\n\t\terr = a.cp.IncreaseSize(ctx, su.Group, su.Delta)\n\t}\n\tif err != nil {"},
		},
		invariants: []string{"ScaleUpWithinNeed"}},
	{name: "--max-nodes-total not applied",
		edits: []edit{
			{"pkg/limits/limits.go", "if l.MaxNodesTotal > 0 {", "if false && l.MaxNodesTotal > 0 {"},
		},
		invariants: []string{"LimitsRespected"}},
	{name: "no stale-taint clean-up at start",
		edits: []edit{
			{"pkg/controller/controller.go", "cleaned = c.cleanUpAtStart(ctx)", "cleaned = true"},
		},
		invariants: []string{"NoStaleTaintAfterRestart"}},
	{name: "scale-down never runs",
		edits: []edit{
			{"pkg/autoscaler/autoscaler.go", "case !l.opts.ScaleDownEnabled:", "case true:"},
		},
		invariants: []string{"Liveness"}},
}

// Each planted bug is found by the search within -dst.planted-time: the
// invariants can fail on the real shell, not only on made-up histories.
// Run by make dst-planted; each bug costs a compile of the test binary.
func TestPlantedBugsAreFound(t *testing.T) {
	if *plantedTime == 0 {
		t.Skip("runs with -dst.planted-time (make dst-planted)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	found := regexp.MustCompile(`(?m)^- seed (\d+) after (\S+): (\w+) at step`)
	only := regexp.MustCompile(*plantedOnly)
	for _, b := range plantedBugs {
		if !only.MatchString(b.name) {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			overlay := plant(t, root, b.edits)
			start := time.Now()
			// The search goes on past findings of other invariants: a
			// drain that ignores its context also keeps a killed process
			// from stopping (Settles) before it acts deposed.
			want := "^(" + strings.Join(b.invariants, "|") + ")$"
			cmd := exec.Command("go", "test", "-overlay", overlay, "-count=1", "-timeout=0", "-run", "^TestSearch$", ".",
				"-dst.schedules=1000000", "-dst.first", "-dst.first-of="+want, "-dst.shrink-runs=0", "-dst.seed=1",
				"-dst.time="+plantedTime.String())
			out, _ := cmd.CombinedOutput()
			var m []string
			for _, f := range found.FindAllStringSubmatch(string(out), -1) {
				if regexp.MustCompile(want).MatchString(f[3]) {
					m = f
					break
				}
			}
			if m == nil {
				t.Fatalf("not found within %s (%s with the compile):\n%s", *plantedTime, time.Since(start).Round(time.Second), tail(out))
			}
			t.Logf("found by seed %s after %s of search (%s with the compile): %s", m[1], m[2],
				time.Since(start).Round(time.Second), m[3])
			if all := found.FindAllString(string(out), -1); len(all) > 1 {
				t.Logf("findings on the way:\n%s", strings.Join(all, "\n"))
			}
		})
	}
}

// plant writes the edited files and the overlay that swaps them in.
func plant(t *testing.T, root string, edits []edit) string {
	dir := t.TempDir()
	texts := map[string]string{}
	for _, e := range edits {
		path := filepath.Join(root, e.file)
		text, ok := texts[path]
		if !ok {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			text = string(b)
		}
		if strings.Count(text, e.old) != 1 {
			t.Fatalf("%s: %q is not there once: the planted bug needs updating", e.file, e.old)
		}
		texts[path] = strings.Replace(text, e.old, e.new, 1)
	}
	replace := map[string]string{}
	for path, text := range texts {
		to := filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(path, root+"/"), "/", "_"))
		if err := os.WriteFile(to, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		replace[path] = to
	}
	b, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlay, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return overlay
}

func tail(b []byte) string {
	s := string(b)
	if len(s) > 3000 {
		s = s[len(s)-3000:]
	}
	return s
}
