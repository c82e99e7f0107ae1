package trace

import (
	"fmt"
	"sort"
	"strings"
)

// Skipped counts the rows a loader left out, by reason, with the first
// lines of each so that a user can look them up.
type Skipped struct {
	reasons map[string]*skipReason
}

type skipReason struct {
	count int
	lines []int
}

// skipLinesShown is how many lines of one reason are named.
const skipLinesShown = 5

func (s *Skipped) add(reason string, line int) {
	if s.reasons == nil {
		s.reasons = map[string]*skipReason{}
	}
	r := s.reasons[reason]
	if r == nil {
		r = &skipReason{}
		s.reasons[reason] = r
	}
	r.count++
	if len(r.lines) < skipLinesShown {
		r.lines = append(r.lines, line)
	}
}

// Count is how many rows were left out.
func (s Skipped) Count() int {
	n := 0
	for _, r := range s.reasons {
		n += r.count
	}
	return n
}

// ByReason is the count of each reason.
func (s Skipped) ByReason() map[string]int {
	out := make(map[string]int, len(s.reasons))
	for k, r := range s.reasons {
		out[k] = r.count
	}
	return out
}

// String says how many rows were skipped and why, most frequent reason
// first: "3 rows skipped: 2 with no run time (lines 4, 9), 1 ...". Empty
// when none were.
func (s Skipped) String() string {
	if s.Count() == 0 {
		return ""
	}
	keys := make([]string, 0, len(s.reasons))
	for k := range s.reasons {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := s.reasons[keys[i]], s.reasons[keys[j]]
		if a.count != b.count {
			return a.count > b.count
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		r := s.reasons[k]
		lines := make([]string, len(r.lines))
		for j, l := range r.lines {
			lines[j] = fmt.Sprint(l)
		}
		more := ""
		if r.count > len(r.lines) {
			more = ", ..."
		}
		word := "lines"
		if r.count == 1 {
			word = "line"
		}
		parts[i] = fmt.Sprintf("%d %s (%s %s%s)", r.count, k, word, strings.Join(lines, ", "), more)
	}
	rows := "rows"
	if s.Count() == 1 {
		rows = "row"
	}
	return fmt.Sprintf("%d %s skipped: %s", s.Count(), rows, strings.Join(parts, "; "))
}
