package disruption

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Policy is an operator's limits on voluntary disruption: budgets and
// maintenance windows. The zero Policy limits nothing.
type Policy struct {
	// Budgets cap how many nodes of a group are disrupted at once; where
	// several are active for a group, the smallest allowance holds.
	Budgets []Budget
	// Windows restrict when the groups they cover are disrupted.
	Windows []Window
}

// Validate reports every budget and window that cannot work, naming the
// flags they were given with.
func (p Policy) Validate(budgetFlag, windowFlag string) error {
	var errs []error
	for i, b := range p.Budgets {
		if b.Nodes < 0 || (b.Percent && b.Nodes > 100) || (b.Schedule != nil) != (b.Duration > 0) {
			errs = append(errs, fmt.Errorf("--%s[%d] %q: nodes must be 0 or more (at most 100%%) and a schedule needs a positive duration",
				budgetFlag, i, b.Spec))
		}
	}
	for i, w := range p.Windows {
		if w.Schedule == nil || w.Duration <= 0 {
			errs = append(errs, fmt.Errorf("--%s[%d] %q: needs a schedule and a positive duration", windowFlag, i, w.Spec))
		}
	}
	return errors.Join(errs...)
}

// Group is what the policies allow one node group at one time.
type Group struct {
	// Allowance is the most nodes of the group disrupted at once, in
	// flight included; math.MaxInt when no budget is active.
	Allowance int
	// Budget is the spec of the budget that sets Allowance, "" when none.
	Budget string
	// Open is false when a window covers the group and none is open.
	Open bool
	// Windows are the specs of the closed windows that keep the group shut,
	// for messages; nil when Open.
	Windows []string
}

// Limited tells whether any budget is active for the group.
func (g Group) Limited() bool { return g.Allowance != math.MaxInt }

// ForGroup combines policies for one group of size nodes at now: the
// smallest active allowance of all of them holds, and the group is open
// only when each policy's windows let it be.
func ForGroup(group string, size int, now time.Time, policies ...Policy) Group {
	out := Group{Allowance: math.MaxInt, Open: true}
	for _, p := range policies {
		if a, by := GroupAllowance(p.Budgets, group, size, now); a < out.Allowance {
			out.Allowance, out.Budget = a, by
		}
		if open, specs := WindowOpen(p.Windows, group, now); !open {
			out.Open = false
			out.Windows = append(out.Windows, specs...)
		}
	}
	return out
}
