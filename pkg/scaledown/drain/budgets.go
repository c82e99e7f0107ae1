package drain

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Budget is one PodDisruptionBudget with what is left of its allowance.
type Budget struct {
	Namespace, Name string
	// Allowed is the budget's status.disruptionsAllowed.
	Allowed int32
	// Remaining is Allowed minus the covered pods that nodes chosen so far
	// will evict. It can go below zero (see Consume).
	Remaining int32
	// Err is set when the selector cannot be parsed.
	Err      error
	selector labels.Selector
}

// Budgets tracks the remaining allowance of every PodDisruptionBudget across
// the pods and nodes of one planning loop. The planner checks pods against
// it with the PodDisruptionBudget rule and calls Consume for the pods of each
// node it picks, so later nodes see what is left. A nil *Budgets has no
// budgets.
type Budgets struct {
	items []Budget
	// byNamespace indexes items; budgets only cover pods of their namespace.
	byNamespace map[string][]int
	consumed    int
}

// NewBudgets tracks pdbs, sorted by namespace and name so that the budget
// named in a message does not depend on input order. An empty selector
// covers every pod of the namespace and a missing one covers none, as in
// policy/v1.
func NewBudgets(pdbs []*policyv1.PodDisruptionBudget) *Budgets {
	b := &Budgets{byNamespace: make(map[string][]int, len(pdbs))}
	for _, pdb := range pdbs {
		if pdb == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		b.items = append(b.items, Budget{
			Namespace: pdb.Namespace, Name: pdb.Name,
			Allowed: pdb.Status.DisruptionsAllowed, Remaining: pdb.Status.DisruptionsAllowed,
			Err: err, selector: sel,
		})
	}
	sort.Slice(b.items, func(i, j int) bool {
		x, y := &b.items[i], &b.items[j]
		if x.Namespace != y.Namespace {
			return x.Namespace < y.Namespace
		}
		return x.Name < y.Name
	})
	for i := range b.items {
		ns := b.items[i].Namespace
		b.byNamespace[ns] = append(b.byNamespace[ns], i)
	}
	return b
}

// Len is the number of budgets.
func (b *Budgets) Len() int {
	if b == nil {
		return 0
	}
	return len(b.items)
}

// Consumed counts the Consume calls that matched a budget; planners use it
// to tell whether verdicts computed earlier may have changed.
func (b *Budgets) Consumed() int {
	if b == nil {
		return 0
	}
	return b.consumed
}

func (b *Budgets) covers(i int, pod *v1.Pod) bool {
	it := &b.items[i]
	return it.Err != nil || it.selector.Matches(labels.Set(pod.Labels))
}

// Covers reports whether any budget covers pod, whatever its allowance.
func (b *Budgets) Covers(pod *v1.Pod) bool {
	if b == nil {
		return false
	}
	for _, i := range b.byNamespace[pod.Namespace] {
		if b.covers(i, pod) {
			return true
		}
	}
	return false
}

// Blocking returns the first budget covering pod that has nothing left (or
// cannot be read), or nil. The result points into b: read it, do not keep it.
func (b *Budgets) Blocking(pod *v1.Pod) *Budget {
	if b == nil {
		return nil
	}
	for _, i := range b.byNamespace[pod.Namespace] {
		if it := &b.items[i]; b.covers(i, pod) && (it.Err != nil || it.Remaining < 1) {
			return it
		}
	}
	return nil
}

// Consume takes one disruption from every budget covering pod, which is
// about to be evicted. It returns true when a budget goes below zero: the
// node's pods under that budget must then be evicted one at a time, each
// waiting for the previous one's replacement.
func (b *Budgets) Consume(pod *v1.Pod) (overdrawn bool) {
	if b == nil {
		return false
	}
	for _, i := range b.byNamespace[pod.Namespace] {
		if !b.covers(i, pod) {
			continue
		}
		it := &b.items[i]
		it.Remaining--
		b.consumed++
		if it.Remaining < 0 {
			overdrawn = true
		}
	}
	return overdrawn
}
