package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/sim/engine"
)

// TestSummaryUnserved: a run whose bound counts work that never ran says
// so next to cost against the bound, with the figures, and names the limit
// that held pods back; a run that served everything carries no mark.
func TestSummaryUnserved(t *testing.T) {
	served, err := NewRun(nil, result("served"))
	if err != nil {
		t.Fatal(err)
	}
	res := result("short")
	res.Unserved = engine.Unserved{PodHours: 1.5, GPUHours: 0.5, JobPodHours: 1, ReplicaPodHours: 0.5, DemandPodHours: 6}
	res.Unscheduled, res.PendingAtEnd = 1, 2
	res.EvictionWaitHours, res.InterruptedHours, res.InterruptedGPUHours = 0.25, 2, 1
	res.LimitsReached = []engine.LimitHit{{Limit: "--max-nodes-total", First: 2 * time.Minute, For: time.Hour}}
	short, _ := NewRun(nil, res)
	var out bytes.Buffer
	if err := WriteSummary(&out, []Run{served, short}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		`cost / lower bound\s+2\.00x\s+2\.00x \(!\)\n`,
		`unserved pod-hours / GPU-hours\s+0\.00 / 0\.00 \(0% of demand\)\s+1\.50 / 0\.50 \(25\.0% of demand\)\n`,
		`pods pending at end\s+0\s+2\n`,
		`eviction wait / run cut short \(pod-h\)\s+0\.00 / 0\.00 \(0\.00 GPU-h\)\s+0\.25 / 2\.00 \(1\.00 GPU-h\)\n`,
		`cluster limits reached\s+none\s+--max-nodes-total\n`,
		`\(!\) short: the lower bound counts 1\.50 pod-hours \(0\.50 GPU-hours\) of demand that never ran \(Job work not done by the end 1\.00, replicas waiting for a node 0\.50; 1 pods never scheduled, 2 waiting at the end\)`,
		`short: --max-nodes-total reached at 2m0s; pods only it could place waited while it held, 1h0m0s in all`,
	} {
		if !regexp.MustCompile(want).MatchString(text) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "(!) served") {
		t.Errorf("a run that served everything is marked:\n%s", text)
	}
}

// TestSummaryInterruptions: the interruptions row appears when a run had
// any, with the nodes reclaimed before they were drained and the work lost.
func TestSummaryInterruptions(t *testing.T) {
	calm, _ := NewRun(nil, result("calm"))
	var out bytes.Buffer
	if err := WriteSummary(&out, []Run{calm}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "interrupted nodes") {
		t.Errorf("a run without interruptions shows the row:\n%s", out.String())
	}
	res := result("spot")
	res.Interruptions = engine.InterruptionResult{Nodes: 7, Reclaimed: 2, LostPodHours: 3.5, LostGPUHours: 28}
	spot, _ := NewRun(nil, res)
	out.Reset()
	if err := WriteSummary(&out, []Run{calm, spot}); err != nil {
		t.Fatal(err)
	}
	want := `interrupted nodes \(reclaimed\) / work lost\s+0 \(0\) / 0\.00 pod-h \(0\.00 GPU-h\)\s+7 \(2\) / 3\.50 pod-h \(28\.00 GPU-h\)\n`
	if !regexp.MustCompile(want).MatchString(out.String()) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
}
