package disruption

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Budget caps how many nodes of each node group it covers may be disrupted
// voluntarily at once: nodes being removed or replaced, moves in flight
// included. A budget with a schedule applies only inside its windows, from
// each time the schedule fires for Duration; outside them it does not
// limit anything. Where several budgets are active for a group, the
// smallest allowance holds. These are Karpenter's NodePool disruption
// budget rules, so its budgets carry over (nodes: 0 during business hours
// beside nodes: 10% at other times, for example).
type Budget struct {
	// Groups selects the node groups the budget covers by their id, a
	// regular expression that must match the whole id; nil covers every
	// group. The allowance applies to each covered group on its own.
	Groups *regexp.Regexp
	// Nodes is the allowance: a count, or a percentage of the group's nodes
	// when Percent is set (rounded up, as Kubernetes rounds maxUnavailable,
	// so 10% of 5 nodes allows 1).
	Nodes   int
	Percent bool
	// Schedule and Duration set the budget's windows; Schedule nil means
	// always active.
	Schedule cron.Schedule
	Duration time.Duration
	// Spec is the text the budget was parsed from, for messages.
	Spec string
}

// Window is a maintenance window: when any window covers a node group, its
// nodes are disrupted voluntarily only while one of its windows is open,
// from each time the schedule fires for Duration.
type Window struct {
	Groups   *regexp.Regexp
	Schedule cron.Schedule
	Duration time.Duration
	Spec     string
}

// covers tells whether a group selector (nil: all) selects group.
func covers(re *regexp.Regexp, group string) bool { return re == nil || re.MatchString(group) }

// open tells whether a window [fire, fire+d) of sched contains now: the
// first firing after now-d is at or before now. Schedules without a time
// zone of their own are read in UTC whatever the location of now.
func open(sched cron.Schedule, d time.Duration, now time.Time) bool {
	now = now.UTC()
	next := sched.Next(now.Add(-d))
	return !next.IsZero() && !next.After(now)
}

// active tells whether the budget limits anything at now.
func (b *Budget) active(now time.Time) bool {
	return b.Schedule == nil || open(b.Schedule, b.Duration, now)
}

// allowance is how many of a group's size nodes the budget lets be
// disrupted at once.
func (b *Budget) allowance(size int) int {
	if !b.Percent {
		return b.Nodes
	}
	return int(math.Ceil(float64(b.Nodes) * float64(size) / 100))
}

// GroupAllowance is the most nodes of a group of size nodes disrupted at
// once that the budgets allow at now (math.MaxInt when none is active),
// and the budget that sets it ("" when none).
func GroupAllowance(budgets []Budget, group string, size int, now time.Time) (int, string) {
	best, by := math.MaxInt, ""
	for i := range budgets {
		b := &budgets[i]
		if !covers(b.Groups, group) || !b.active(now) {
			continue
		}
		if a := b.allowance(size); a < best {
			best, by = a, b.Spec
		}
	}
	return best, by
}

// WindowOpen tells whether group may be disrupted at now: no window covers
// it, or one that does is open. The second result lists the windows that
// cover it, for messages.
func WindowOpen(windows []Window, group string, now time.Time) (bool, []string) {
	var specs []string
	for i := range windows {
		w := &windows[i]
		if !covers(w.Groups, group) {
			continue
		}
		if open(w.Schedule, w.Duration, now) {
			return true, nil
		}
		specs = append(specs, w.Spec)
	}
	return len(specs) == 0, specs
}

// ParseBudget reads a budget written as semicolon-separated key=value
// pairs: nodes (required: a count or a percentage), groups (a regular
// expression on node group ids), schedule (a cron expression with five
// fields or a descriptor such as @daily, in UTC unless it starts with
// CRON_TZ=) and duration (required with schedule). For example
// "nodes=1;groups=gpu-.*;schedule=0 22 * * *;duration=8h".
func ParseBudget(s string) (Budget, error) {
	b := Budget{Spec: s}
	kv, err := pairs(s, "nodes", "groups", "schedule", "duration")
	if err != nil {
		return b, fmt.Errorf("budget %q: %w", s, err)
	}
	nodes, ok := kv["nodes"]
	if !ok {
		return b, fmt.Errorf("budget %q: nodes: required (a count such as 3 or a percentage such as 10%%)", s)
	}
	if b.Nodes, b.Percent, err = parseNodes(nodes); err != nil {
		return b, fmt.Errorf("budget %q: nodes: %w", s, err)
	}
	if b.Groups, err = parseGroups(kv); err != nil {
		return b, fmt.Errorf("budget %q: %w", s, err)
	}
	if b.Schedule, b.Duration, err = parseWindow(kv, false); err != nil {
		return b, fmt.Errorf("budget %q: %w", s, err)
	}
	return b, nil
}

// ParseWindow reads a window written like a budget without nodes:
// "groups=gpu-.*;schedule=0 22 * * *;duration=8h" (schedule and duration
// required).
func ParseWindow(s string) (Window, error) {
	w := Window{Spec: s}
	kv, err := pairs(s, "groups", "schedule", "duration")
	if err != nil {
		return w, fmt.Errorf("window %q: %w", s, err)
	}
	if w.Groups, err = parseGroups(kv); err != nil {
		return w, fmt.Errorf("window %q: %w", s, err)
	}
	if w.Schedule, w.Duration, err = parseWindow(kv, true); err != nil {
		return w, fmt.Errorf("window %q: %w", s, err)
	}
	return w, nil
}

// pairs splits "k=v;k=v" and refuses unknown and repeated keys.
func pairs(s string, known ...string) (map[string]string, error) {
	kv := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !ok:
			return nil, fmt.Errorf("%q: want key=value", part)
		case !contains(known, k):
			return nil, fmt.Errorf("unknown key %q (known: %s)", k, strings.Join(known, ", "))
		case kv[k] != "":
			return nil, fmt.Errorf("key %q given twice", k)
		case v == "":
			return nil, fmt.Errorf("%s: empty value", k)
		}
		kv[k] = v
	}
	return kv, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func parseNodes(v string) (int, bool, error) {
	pct := strings.HasSuffix(v, "%")
	n, err := strconv.Atoi(strings.TrimSuffix(v, "%"))
	switch {
	case err != nil:
		return 0, false, fmt.Errorf("want a count such as 3 or a percentage such as 10%%, got %q", v)
	case n < 0:
		return 0, false, fmt.Errorf("must not be negative, got %q", v)
	case pct && n > 100:
		return 0, false, fmt.Errorf("a percentage must be at most 100%%, got %q", v)
	}
	return n, pct, nil
}

func parseGroups(kv map[string]string) (*regexp.Regexp, error) {
	g, ok := kv["groups"]
	if !ok {
		return nil, nil
	}
	re, err := regexp.Compile("^(?:" + g + ")$")
	if err != nil {
		return nil, fmt.Errorf("groups: %q is not a regular expression: %w", g, err)
	}
	return re, nil
}

// parseWindow reads schedule and duration; both or neither must be set,
// and both when required.
func parseWindow(kv map[string]string, required bool) (cron.Schedule, time.Duration, error) {
	spec, hasSched := kv["schedule"]
	dur, hasDur := kv["duration"]
	switch {
	case required && !hasSched:
		return nil, 0, fmt.Errorf("schedule: required (a cron expression such as \"0 22 * * *\")")
	case hasSched != hasDur:
		return nil, 0, fmt.Errorf("schedule and duration go together: give both or neither")
	case !hasSched:
		return nil, 0, nil
	}
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, 0, fmt.Errorf("schedule: %q: %w", spec, err)
	}
	d, err := time.ParseDuration(dur)
	if err != nil {
		return nil, 0, fmt.Errorf("duration: %q: %w", dur, err)
	}
	if d <= 0 {
		return nil, 0, fmt.Errorf("duration: must be positive, got %q", dur)
	}
	return sched, d, nil
}
