package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// ConsolidationResult is what consolidation did in a run, and why it did
// nothing when it did nothing.
type ConsolidationResult struct {
	// Enabled: consolidation was on.
	Enabled bool
	// Deletes and Replaces count the moves started; NodesRemoved the nodes
	// their drains removed (the replaced nodes included), Evictions the
	// pods those drains evicted.
	Deletes, Replaces, NodesRemoved, Evictions int
	// Held counts, by code, the loops in which consolidation did not plan
	// (ScaleDownNotRun, ScaleDownInCooldown, PodsWaitForCapacity); Loops
	// counts the loops in all.
	Held  map[string]int
	Loops int
}

// Summary says in one line what consolidation did: its moves, or why it
// made none.
func (c *ConsolidationResult) Summary() string {
	switch {
	case !c.Enabled:
		return "off"
	case c.Deletes+c.Replaces > 0:
		return fmt.Sprintf("%d delete(s), %d replace(s): %d node(s) removed, %d pod(s) evicted",
			c.Deletes, c.Replaces, c.NodesRemoved, c.Evictions)
	}
	held := 0
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(c.Held)) {
		held += c.Held[code]
		parts = append(parts, fmt.Sprintf("%s %d", code, c.Held[code]))
	}
	if held == 0 {
		return fmt.Sprintf("no move: none found that saves money in %d loop(s)", c.Loops)
	}
	return fmt.Sprintf("no move: held in %d of %d loop(s) (%s), none found in the others", held, c.Loops, strings.Join(parts, ", "))
}

// noteConsolidation counts one loop's consolidation status.
func (r *recorder) noteConsolidation(c *status.Consolidation) {
	if c == nil {
		return
	}
	cr := &r.consolidation
	cr.Enabled = true
	cr.Loops++
	if c.Held != "" {
		if cr.Held == nil {
			cr.Held = map[string]int{}
		}
		cr.Held[c.Held]++
	}
	for _, m := range c.Moves {
		switch m.Kind {
		case status.MoveReplace:
			cr.Replaces++
		case status.MoveDelete:
			cr.Deletes++
		}
	}
}
