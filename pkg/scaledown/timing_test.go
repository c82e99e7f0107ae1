package scaledown_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
)

// step is one loop of a planner that lives across loops.
type step struct {
	at         time.Duration // after t0
	edit       func(c *cluster)
	wantDelete []string
	// wantWait maps waiting nodes to their reason and remaining wait.
	wantWait map[string]waiting
}

type waiting struct {
	reason scaledown.Reason
	wait   time.Duration
	since  time.Duration // after t0
}

func runSteps(t *testing.T, c *cluster, opts scaledown.Options, steps []step) {
	t.Helper()
	planner := newPlanner(t, opts)
	for _, st := range steps {
		if st.edit != nil {
			st.edit(c)
		}
		before := fingerprint(c.snap)
		p := planner.Plan(c.input(t0.Add(st.at)))
		checkInvariants(t, c.snap, before, p)
		if got := deleted(p); !slices.Equal(got, st.wantDelete) {
			t.Fatalf("at +%s: removed %v, want %v; kept:%s", st.at, got, st.wantDelete, keptSummary(p))
		}
		if len(p.Unneeded) != len(st.wantWait) {
			t.Errorf("at +%s: %d nodes wait, want %d: %+v", st.at, len(p.Unneeded), len(st.wantWait), p.Unneeded)
		}
		for node, w := range st.wantWait {
			u := unneeded(t, p, node)
			if u.Reason != w.reason || u.Wait != w.wait || !u.Since.Equal(t0.Add(w.since)) {
				t.Errorf("at +%s: %s waits %+v, want reason %s, wait %s, since +%s", st.at, node, u, w.reason, w.wait, w.since)
			}
			if k := kept(t, p, node); k.Reason != w.reason {
				t.Errorf("at +%s: %s kept for %s, want %s", st.at, node, k.Reason, w.reason)
			}
		}
	}
}

func TestUnneededTimeMustPass(t *testing.T) {
	c := newCluster(t).group("pool", 0, 2)
	c.node(node4("a").Build(), "pool")
	busy(c, "b", "pool")
	opts := scaledown.DefaultOptions() // 10m unneeded time
	runSteps(t, c, opts, []step{
		{at: 0, wantWait: map[string]waiting{"a": {scaledown.ReasonNotUnneededLongEnough, 10 * time.Minute, 0}}},
		{at: 9 * time.Minute, wantWait: map[string]waiting{"a": {scaledown.ReasonNotUnneededLongEnough, time.Minute, 0}}},
		{at: 10 * time.Minute, wantDelete: []string{"a"}},
	})
}

func TestUnreadyNodeGoesAfterUnreadyTime(t *testing.T) {
	c := newCluster(t).group("pool", 0, 2)
	c.node(unready(node4("a").Build()), "pool")
	busy(c, "b", "pool")
	runSteps(t, c, scaledown.DefaultOptions(), []step{
		{at: 0, wantWait: map[string]waiting{"a": {scaledown.ReasonNotUnreadyLongEnough, 20 * time.Minute, 0}}},
		{at: 10 * time.Minute, wantWait: map[string]waiting{"a": {scaledown.ReasonNotUnreadyLongEnough, 10 * time.Minute, 0}}},
		{at: 20 * time.Minute, wantDelete: []string{"a"}},
	})
}

func TestNodeThatBecomesNeededStartsItsClockAgain(t *testing.T) {
	c := newCluster(t).group("pool", 0, 2)
	c.node(node4("a").Build(), "pool")
	busy(c, "b", "pool")
	load := rs("burst", "3")
	load.Spec.NodeName = "a"
	runSteps(t, c, scaledown.DefaultOptions(), []step{
		{at: 0, wantWait: map[string]waiting{"a": {scaledown.ReasonNotUnneededLongEnough, 10 * time.Minute, 0}}},
		{at: 5 * time.Minute, edit: func(c *cluster) { must(t, c.snap.AddPod(load)) }},
		{at: 6 * time.Minute, edit: func(c *cluster) { must(t, c.snap.RemovePod("default", "burst")) },
			wantWait: map[string]waiting{"a": {scaledown.ReasonNotUnneededLongEnough, 10 * time.Minute, 6 * time.Minute}}},
		{at: 15 * time.Minute, wantWait: map[string]waiting{"a": {scaledown.ReasonNotUnneededLongEnough, time.Minute, 6 * time.Minute}}},
		{at: 16 * time.Minute, wantDelete: []string{"a"}},
	})
}

func TestGPUNodeWaitsForItsGPUs(t *testing.T) {
	c := newCluster(t).group("gpu", 0, 2)
	// Registered and Ready, labelled as an accelerator node, no GPU
	// advertised yet by the device plugin.
	c.node(node4("g").Label(gpu.LabelGKEAccelerator, "nvidia-l4").Build(), "gpu")
	c.node(node4("g2").GPU(1).Build(), "gpu", controlledBy(builder.Pod("train").CPU("1").GPU(1).Build(), "Job", "train"))
	runSteps(t, c, scaledown.DefaultOptions(), []step{
		{at: 0, wantWait: map[string]waiting{"g": {scaledown.ReasonGPUsNotAdvertised, 20 * time.Minute, 0}}},
		{at: 12 * time.Minute, wantWait: map[string]waiting{"g": {scaledown.ReasonGPUsNotAdvertised, 8 * time.Minute, 0}}},
		{at: 20 * time.Minute, wantDelete: []string{"g"}},
	})
}

// Without any accelerator label, a node of a group whose template has GPUs
// is still waiting for them while it has none: scale-up and scale-down
// agree on that.
func TestUnlabelledNodeOfGPUGroupWaitsForItsGPUs(t *testing.T) {
	c := newCluster(t)
	if err := c.snap.SetNodeGroup(builder.NodeGroup("gpu").Max(4).Target(1).Template(node4("t").GPU(1).Build()).Build()); err != nil {
		t.Fatal(err)
	}
	c.node(node4("g").Build(), "gpu")
	p := planOnce(t, c, scaledown.DefaultOptions(), nil)
	if k := kept(t, p, "g"); k.Reason != scaledown.ReasonGPUsNotAdvertised {
		t.Errorf("kept for %s (%s), want %s", k.Reason, k.Message, scaledown.ReasonGPUsNotAdvertised)
	}
}

func TestGPUsNotAdvertisedMessage(t *testing.T) {
	c := newCluster(t).group("gpu", 0, 1)
	c.node(node4("g").Label(gpu.LabelEKSAccelerator, "nvidia-a10g").Build(), "gpu")
	p := planOnce(t, c, scaledown.DefaultOptions(), nil)
	if k := kept(t, p, "g"); !strings.Contains(k.Message, "not advertised") || !strings.Contains(k.Message, "--scale-down-unready-time") {
		t.Errorf("message %q should say the GPUs are not advertised and name the unready time", k.Message)
	}
}

// With room to simulate only one non-empty node per loop, the node found
// unneeded first keeps its turn even when another becomes emptier, so its
// clock runs out instead of the two taking turns forever.
func TestUnneededNodeKeepsItsTurn(t *testing.T) {
	c := newCluster(t).group("pool", 0, 3)
	c.node(node4("a").Build(), "pool", rs("a-0", "400m"))
	busy(c, "b", "pool")
	c.node(node4("c").Build(), "pool", rs("c-0", "200m"), rs("c-1", "400m"))
	opts := scaledown.DefaultOptions()
	opts.NonEmptyCandidatesCount = 1
	runSteps(t, c, opts, []step{
		{at: 0, wantWait: map[string]waiting{"a": {scaledown.ReasonNotUnneededLongEnough, 10 * time.Minute, 0}}},
		{at: 5 * time.Minute, edit: func(c *cluster) { must(t, c.snap.RemovePod("default", "c-1")) },
			wantWait: map[string]waiting{"a": {scaledown.ReasonNotUnneededLongEnough, 5 * time.Minute, 0}}},
		{at: 10 * time.Minute, wantDelete: []string{"a"}},
	})
}

func TestCooldowns(t *testing.T) {
	type tc struct {
		name   string
		opts   func(*scaledown.Options)
		input  func(*scaledown.Input)
		paused bool
		until  time.Duration
		flag   string
	}
	for _, c := range []tc{
		{name: "recent scale-up pauses removal", input: func(in *scaledown.Input) { in.LastScaleUp = t0.Add(-5 * time.Minute) },
			paused: true, until: 5 * time.Minute, flag: "--scale-down-delay-after-add=10m0s"},
		{name: "scale-up as long ago as the delay no longer pauses", input: func(in *scaledown.Input) { in.LastScaleUp = t0.Add(-10 * time.Minute) }},
		{name: "recent removal pauses when a delay after delete is set",
			opts:  func(o *scaledown.Options) { o.DelayAfterDelete = time.Minute },
			input: func(in *scaledown.Input) { in.LastScaleDelete = t0.Add(-30 * time.Second) }, paused: true, until: 30 * time.Second,
			flag: "--scale-down-delay-after-delete=1m0s"},
		{name: "removal does not pause with the default delay after delete of zero",
			input: func(in *scaledown.Input) { in.LastScaleDelete = t0 }},
		{name: "recent failed removal pauses", input: func(in *scaledown.Input) { in.LastScaleDownFailure = t0.Add(-2 * time.Minute) },
			paused: true, until: time.Minute, flag: "--scale-down-delay-after-failure=3m0s"},
		{name: "failed removal as long ago as the delay no longer pauses",
			input: func(in *scaledown.Input) { in.LastScaleDownFailure = t0.Add(-3 * time.Minute) }},
		{name: "the delay ending last is the one reported",
			input: func(in *scaledown.Input) {
				in.LastScaleUp = t0.Add(-9 * time.Minute)
				in.LastScaleDownFailure = t0.Add(-time.Minute)
			}, paused: true, until: 2 * time.Minute, flag: "--scale-down-delay-after-failure"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := newCluster(t).group("pool", 0, 2)
			cl.node(node4("a").Build(), "pool")
			busy(cl, "b", "pool")
			opts := immediate()
			if c.opts != nil {
				c.opts(&opts)
			}
			p := planOnce(t, cl, opts, c.input)
			if !c.paused {
				if !slices.Equal(deleted(p), []string{"a"}) || !p.CooldownUntil.IsZero() {
					t.Fatalf("want a removed with no cooldown, got removed %v, cooldown until %s", deleted(p), p.CooldownUntil)
				}
				return
			}
			if len(p.Delete) != 0 {
				t.Fatalf("removed %v during a cooldown", deleted(p))
			}
			if !p.CooldownUntil.Equal(t0.Add(c.until)) || !strings.Contains(p.CooldownReason, c.flag) {
				t.Errorf("cooldown until %s (%s), want %s naming %s", p.CooldownUntil, p.CooldownReason, t0.Add(c.until), c.flag)
			}
			if u := unneeded(t, p, "a"); u.Reason != scaledown.ReasonCooldown || u.Wait != 0 {
				t.Errorf("a waits %+v, want %s with no unneeded time left", u, scaledown.ReasonCooldown)
			}
		})
	}
}

func TestParallelismLimits(t *testing.T) {
	runPlanCases(t, []planCase{
		{
			name: "at most MaxScaleDownParallelism nodes go at once",
			build: func(c *cluster) {
				c.group("pool", 0, 3)
				c.node(node4("a").Build(), "pool").node(node4("b").Build(), "pool").node(node4("c").Build(), "pool")
			},
			opts:       func(o *scaledown.Options) { o.MaxScaleDownParallelism = 2 },
			wantDelete: []string{"a", "b"},
			wantKept:   map[string]scaledown.Reason{"c": scaledown.ReasonParallelismLimit},
		},
		{
			name: "deletions in progress use up the parallelism",
			build: func(c *cluster) {
				c.group("pool", 0, 3)
				c.node(node4("a").Build(), "pool")
			},
			opts: func(o *scaledown.Options) { o.MaxScaleDownParallelism = 1 },
			input: func(in *scaledown.Input) {
				in.Deleting = []scaledown.Deletion{{Node: "gone", Group: "pool"}}
			},
			wantKept: map[string]scaledown.Reason{"a": scaledown.ReasonParallelismLimit},
		},
		{
			name: "one node is drained at a time by default, empty nodes go besides",
			build: func(c *cluster) {
				c.group("pool", 0, 4)
				c.node(node4("a").Build(), "pool", rs("a-0", "500m"))
				busy(c, "b", "pool")
				c.node(node4("c").Build(), "pool", rs("c-0", "600m"))
				c.node(node4("e").Build(), "pool")
			},
			wantDelete: []string{"e", "a"},
			wantKept:   map[string]scaledown.Reason{"c": scaledown.ReasonDrainParallelismLimit},
		},
		{
			name: "a drain in progress holds back the next drain but not empty nodes",
			build: func(c *cluster) {
				c.group("pool", 0, 4)
				c.node(node4("a").Build(), "pool", rs("a-0", "500m"))
				busy(c, "b", "pool")
				c.node(node4("e").Build(), "pool")
			},
			input: func(in *scaledown.Input) {
				in.Deleting = []scaledown.Deletion{{Node: "gone", Group: "pool", Drain: true}}
			},
			wantDelete: []string{"e"},
			wantKept:   map[string]scaledown.Reason{"a": scaledown.ReasonDrainParallelismLimit},
		},
		{
			name: "non-empty candidates beyond the count are not simulated",
			build: func(c *cluster) {
				c.group("pool", 0, 3)
				c.node(node4("a").Build(), "pool", rs("a-0", "500m"))
				busy(c, "b", "pool")
				c.node(node4("c").Build(), "pool", rs("c-0", "600m"))
			},
			opts:       func(o *scaledown.Options) { o.NonEmptyCandidatesCount, o.MaxDrainParallelism = 1, 0 },
			wantDelete: []string{"a"},
			wantKept:   map[string]scaledown.Reason{"c": scaledown.ReasonCandidateLimit},
		},
	})
}

func TestSoftTaints(t *testing.T) {
	c := newCluster(t).group("pool", 0, 4)
	c.node(node4("a").Build(), "pool")
	c.node(node4("already").Taint(disruption.TaintDeletionCandidate, "1", v1.TaintEffectPreferNoSchedule).Build(), "pool")
	c.node(node4("busy").Taint(disruption.TaintDeletionCandidate, "1", v1.TaintEffectPreferNoSchedule).Build(), "pool", rs("load", "3"))
	c.node(node4("quiet").Build(), "pool", rs("load2", "3"))
	p := planOnce(t, c, scaledown.DefaultOptions(), nil)
	if !slices.Equal(p.SoftTaint, []string{"a"}) {
		t.Errorf("soft taint %v, want the waiting node without the taint", p.SoftTaint)
	}
	if !slices.Equal(p.SoftUntaint, []string{"busy"}) {
		t.Errorf("soft untaint %v, want the needed node carrying the taint", p.SoftUntaint)
	}
	opts := scaledown.DefaultOptions()
	opts.MaxBulkSoftTaintCount = 1
	c2 := newCluster(t).group("pool", 0, 3)
	c2.node(node4("x").Build(), "pool").node(node4("y").Build(), "pool").node(node4("z").Build(), "pool")
	if p := planOnce(t, c2, opts, nil); !slices.Equal(p.SoftTaint, []string{"x"}) {
		t.Errorf("soft taint %v, want only the first node under MaxBulkSoftTaintCount=1", p.SoftTaint)
	}
}

func TestPlanCarriesMaxGracefulTermination(t *testing.T) {
	opts := scaledown.DefaultOptions()
	opts.MaxGracefulTerminationSec = 90
	p := planOnce(t, newCluster(t), opts, nil)
	if p.MaxGracefulTermination != 90*time.Second || !p.Now.Equal(t0) {
		t.Errorf("plan %+v should carry 90s and the loop time", p)
	}
	if p := newPlanner(t, opts).Plan(scaledown.Input{Now: t0}); len(p.Delete)+len(p.Kept) != 0 || p.MaxGracefulTermination != 90*time.Second {
		t.Errorf("a plan without a snapshot should be empty, got %+v", p)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
