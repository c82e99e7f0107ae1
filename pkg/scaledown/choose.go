package scaledown

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// choose decides, for each unneeded node, whether it goes now or waits.
// First what no other removal changes: it must have been unneeded for
// UnneededTime (UnreadyTime when unready; either as its group's options set
// it), no pod annotated safe-to-evict "on-completion" may still run on it,
// scale-down must not be cooling down, and its group must be inside its
// disruption windows. The nodes that pass are due; grant then hands them
// the parallelism slots and disruption budgets, in deletion order: empty
// nodes first, then nodes to drain, those whose pods must be evicted one by
// one last.
func (s *session) choose() {
	now := s.in.Now
	until, why := s.cooldown()
	s.plan.CooldownUntil, s.plan.CooldownReason = until, why
	var due []int32
	for _, ri := range s.deleteOrder() {
		r := &s.removals[ri]
		st := &s.nodes[r.node]
		since, _ := s.p.tracker.Since(st.name())
		g := s.opts.forGroup(st.group)
		need, from := g.unneeded, g.unneededFrom
		if st.unready() {
			need, from = g.unready, g.unreadyFrom
		}
		switch wait := since.Add(need).Sub(now); {
		case wait > 0:
			s.wait(r, since, wait, waitReason(st), s.waitMessage(st, now.Sub(since), need, from))
		case st.judged.Waits != nil:
			w := st.judged.Waits
			s.wait(r, since, 0, ReasonOnCompletionPod, fmt.Sprintf(
				"unneeded long enough, but pod %s/%s is annotated %s=%s: the node is removed once it has completed",
				w.Namespace, w.Name, drain.AnnotationSafeToEvict, drain.SafeToEvictOnCompletion))
		case !until.IsZero():
			s.wait(r, since, 0, ReasonCooldown, "unneeded long enough, but scale-down is paused until "+
				until.UTC().Format(time.RFC3339)+": "+why)
		case !s.policy(st).Open:
			s.wait(r, since, 0, ReasonOutsideWindow, fmt.Sprintf(
				"unneeded long enough, but node group %s is disrupted only in its windows (%s), none open now",
				st.groupID(), strings.Join(s.policy(st).Windows, " | ")))
		default:
			due = append(due, ri)
		}
	}
	s.grant(due)
}

// grant gives each due removal, in order, a place within
// --max-scale-down-parallelism, --max-drain-parallelism and its group's
// disruption budget, counting the removals in flight and those chosen
// before it. The removals refused a place are kept in s.refused: a chosen
// removal that revalidation drops frees its place for them in the same loop.
func (s *session) grant(due []int32) {
	chosen, drains := 0, 0
	inGroup := map[string]int{}
	for ri := range s.removals {
		if r := &s.removals[ri]; s.nodes[r.node].deleted {
			chosen++
			inGroup[s.nodes[r.node].groupID()]++
			if !r.empty {
				drains++
			}
		}
	}
	total := left(s.opts.MaxScaleDownParallelism, len(s.in.Deleting)+chosen)
	drainsLeft := left(s.opts.MaxDrainParallelism, s.deletingDrains+drains)
	s.refused = s.refused[:0]
	for _, ri := range due {
		r := &s.removals[ri]
		st := &s.nodes[r.node]
		pol := s.policy(st)
		busy := s.deletingGroups[st.groupID()] + inGroup[st.groupID()]
		switch {
		case pol.Limited() && busy >= pol.Allowance:
			s.refuse(ri, ReasonDisruptionBudget, fmt.Sprintf(
				"unneeded long enough, but node group %s may have %d nodes disrupted at once (--disruption-budget %q), %d are",
				st.groupID(), pol.Allowance, pol.Budget, busy))
		case total == 0:
			s.refuse(ri, ReasonParallelismLimit, fmt.Sprintf(
				"unneeded long enough, but the most nodes removed at once are being removed (--max-scale-down-parallelism=%d)",
				s.opts.MaxScaleDownParallelism))
		case !r.empty && drainsLeft == 0:
			s.refuse(ri, ReasonDrainParallelismLimit, fmt.Sprintf(
				"unneeded long enough, but the most nodes drained at once are being drained (--max-drain-parallelism=%d)",
				s.opts.MaxDrainParallelism))
		default:
			st.deleted = true
			inGroup[st.groupID()]++
			total--
			if !r.empty {
				drainsLeft--
			}
		}
	}
}

// refused is a due removal that found no place, with why.
type refused struct {
	removal int32
	reason  Reason
	message string
}

func (s *session) refuse(ri int32, reason Reason, msg string) {
	s.refused = append(s.refused, refused{removal: ri, reason: reason, message: msg})
}

// settleRefused makes the removals still refused a place wait, with why,
// and lists the chosen ones in deletion order.
func (s *session) settleRefused() {
	for _, rf := range s.refused {
		r := &s.removals[rf.removal]
		since, _ := s.p.tracker.Since(s.nodes[r.node].name())
		s.wait(r, since, 0, rf.reason, rf.message)
	}
	s.refused = s.refused[:0]
	s.deletes = s.deletes[:0]
	for _, ri := range s.deleteOrder() {
		if s.nodes[s.removals[ri].node].deleted {
			s.deletes = append(s.deletes, ri)
		}
	}
}

// policy is what the disruption budgets and windows allow node st's group
// now, worked out once a loop per group.
func (s *session) policy(st *nodeState) disruption.Group {
	if s.policies == nil {
		sizes := map[string]int{} // each group's nodes as the loop found them
		for i := range s.nodes {
			sizes[s.nodes[i].groupID()]++
		}
		s.policies = make(map[string]disruption.Group, len(sizes))
		for id, size := range sizes {
			s.policies[id] = disruption.ForGroup(id, size, s.in.Now, s.opts.Disruption)
		}
	}
	return s.policies[st.groupID()]
}

// left is what a parallelism limit leaves after the deletions in progress;
// a limit of 0 leaves no bound.
func left(limit, inProgress int) int {
	if limit == 0 {
		return math.MaxInt
	}
	return max(limit-inProgress, 0)
}

// deleteOrder lists removals: empty ones, then drains, then drains that
// must evict one by one, each in simulation order.
func (s *session) deleteOrder() []int32 {
	order := make([]int32, 0, len(s.removals))
	for pass := 0; pass < 3; pass++ {
		for ri := range s.removals {
			r := &s.removals[ri]
			rank := 1
			if r.empty {
				rank = 0
			} else if r.oneByOne {
				rank = 2
			}
			if rank == pass {
				order = append(order, int32(ri))
			}
		}
	}
	return order
}

func waitReason(st *nodeState) Reason {
	switch {
	case st.awaitingGPU && st.ready:
		return ReasonGPUsNotAdvertised
	case st.unready():
		return ReasonNotUnreadyLongEnough
	}
	return ReasonNotUnneededLongEnough
}

func (s *session) waitMessage(st *nodeState, so, need time.Duration, from string) string {
	so = so.Round(time.Second)
	switch waitReason(st) {
	case ReasonGPUsNotAdvertised:
		return fmt.Sprintf("the device plugin has not advertised the node's GPUs yet; "+
			"it is removed if it stays unneeded for %s (%s), %s so far", need, from, so)
	case ReasonNotUnreadyLongEnough:
		return fmt.Sprintf("unready and unneeded for %s of %s (%s)", so, need, from)
	}
	return fmt.Sprintf("unneeded for %s of %s (%s)", so, need, from)
}

func (s *session) wait(r *removal, since time.Time, wait time.Duration, reason Reason, msg string) {
	st := &s.nodes[r.node]
	st.waiting = true
	s.unneeded = append(s.unneeded, Unneeded{Node: st.name(), Group: st.groupID(), Since: since,
		Wait: wait, Empty: r.empty, Reason: reason})
	s.keep(r.node, reason, msg)
}

// cooldown returns when the latest of the delays after scale-up, removal
// and failed removal ends, and why; zero when none is running at Now.
func (s *session) cooldown() (time.Time, string) {
	var until time.Time
	var why string
	for _, d := range []struct {
		at    time.Time
		delay time.Duration
		what  string
		flag  string
	}{
		{s.in.LastScaleUp, s.opts.DelayAfterAdd, "scale-up", "scale-down-delay-after-add"},
		{s.in.LastScaleDelete, s.opts.DelayAfterDelete, "node removal", "scale-down-delay-after-delete"},
		{s.in.LastScaleDownFailure, s.opts.DelayAfterFailure, "failed removal", "scale-down-delay-after-failure"},
	} {
		if d.at.IsZero() {
			continue
		}
		if end := d.at.Add(d.delay); end.After(until) && end.After(s.in.Now) {
			until = end
			why = fmt.Sprintf("%s at %s and --%s=%s", d.what, d.at.UTC().Format(time.RFC3339), d.flag, d.delay)
		}
	}
	return until, why
}

// softTaints lists the waiting nodes to mark as deletion candidates, and
// the marked nodes that are needed again.
func (s *session) softTaints() {
	limit := s.opts.MaxBulkSoftTaintCount
	for i := range s.nodes {
		st := &s.nodes[i]
		has := hasTaint(st.ni.Node, disruption.TaintDeletionCandidate)
		switch {
		case st.waiting && !has && under(limit, len(s.plan.SoftTaint)):
			s.plan.SoftTaint = append(s.plan.SoftTaint, st.name())
		case !st.waiting && !st.deleted && has && under(limit, len(s.plan.SoftUntaint)):
			s.plan.SoftUntaint = append(s.plan.SoftUntaint, st.name())
		}
	}
}

func under(limit, n int) bool { return limit == 0 || n < limit }

// finish assembles the plan, copying out of the working memory.
func (s *session) finish() Plan {
	p := &s.plan
	total := 0
	for _, ri := range s.deletes {
		total += s.removals[ri].movesHi - s.removals[ri].movesLo
	}
	moves := make([]disruption.Move, 0, total)
	for _, ri := range s.deletes {
		r := &s.removals[ri]
		st := &s.nodes[r.node]
		since, _ := s.p.tracker.Since(st.name())
		lo := len(moves)
		moves = append(moves, s.moves[r.movesLo:r.movesHi]...)
		p.Delete = append(p.Delete, disruption.Removal{
			Node: st.name(), Group: st.groupID(), Empty: r.empty, Unready: st.unready(),
			Utilization: st.util, UnneededSince: since,
			Evict:         moves[lo:len(moves):len(moves)],
			DaemonSetPods: cloneOrNil(s.daemonSetPods[r.dsLo:r.dsHi]),
			EvictOneByOne: r.oneByOne,
		})
	}
	slices.SortFunc(s.kept, func(a, b Kept) int { return strings.Compare(a.Node, b.Node) })
	slices.SortFunc(s.unneeded, func(a, b Unneeded) int { return strings.Compare(a.Node, b.Node) })
	p.Kept, p.Unneeded = s.kept, s.unneeded
	return *p
}

func cloneOrNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}
