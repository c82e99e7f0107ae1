package consolidation

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// Options tune consolidation. Each field names the flag proposed for it and
// its default (DefaultOptions); the package documentation gives the
// reasoning behind each default.
type Options struct {
	// Enabled (--consolidation, false): whether Plan moves anything. Off in
	// the upstream-compatible defaults, which never disrupt a node above
	// the utilization thresholds; on in the gpu-cost profile.
	Enabled bool
	// StableTime (--consolidation-stable-time, 10m): how long a node must
	// have been found consolidatable, loop after loop, before a move that
	// takes it is carried out. The same wait --scale-down-unneeded-time asks
	// of an idle node.
	StableTime time.Duration
	// MinSavings (--consolidation-min-savings, 0.2): the least fraction of
	// the hourly price of the nodes a replacement removes that it must save.
	// Deleting a node whose pods fit elsewhere always saves its price.
	MinSavings float64
	// MinSavingsPerPod (--consolidation-min-savings-per-pod, 0.01): the
	// least hourly saving a move must bring for each pod it evicts, in the
	// unit of the node groups' prices. A restart costs the pod's owner
	// something the price list does not show, so a move that saves a little
	// for many pods is not made. Karpenter's proposed default for the same
	// rule, a cent an hour a pod; where the nodes' price is unknown only
	// node counts are weighed.
	MinSavingsPerPod float64
	// SpotReplacements (--consolidation-spot-replacements, false): whether a
	// replacement may come from a spot group when the nodes it replaces are
	// not all spot. Moving steady work onto interruptible capacity is a
	// choice of policy, not of price.
	SpotReplacements bool
	// MaxBatch (--consolidation-max-batch, 100): the most nodes one
	// multi-node replacement weighs at once.
	MaxBatch int
	// Budgets (--consolidation-budget, "nodes=10%"): how many nodes of each
	// group consolidation may disrupt at once; see disruption.Budget.
	Budgets []disruption.Budget
	// Windows (--consolidation-window, none): maintenance windows for
	// consolidation; see disruption.Window.
	Windows []disruption.Window
	// Disruption (--disruption-budget, --disruption-window; none) limits
	// every voluntary disruption, consolidation's and scale-down's
	// together; consolidation obeys it beside its own budgets and windows.
	Disruption disruption.Policy
	// Drain are the drain rules' options, shared with scale-down
	// (--skip-nodes-with-local-storage, --skip-nodes-with-system-pods,
	// --skip-nodes-with-custom-controller-pods,
	// --expendable-pods-priority-cutoff).
	Drain drain.Options
	// MaxCloudProviderNodeDeletionTime (shared with scale-down, 5m): a
	// ToBeDeletedByClusterAutoscaler taint older than this belongs to a
	// removal that died.
	MaxCloudProviderNodeDeletionTime time.Duration
	// Limits are the cluster-wide bounds (--max-nodes-total,
	// --cores-total, --memory-total, --gpu-total): a replacement must fit
	// under the maximums while old and new nodes both run, and no move
	// takes the cluster below a minimum.
	Limits limits.Limits
}

// MaxSavingsPerPod bounds MinSavingsPerPod: a thousand an hour a pod
// already forbids every move, and a finite bound keeps the products finite.
const MaxSavingsPerPod = 1000

// DefaultBudget is the budget DefaultOptions sets (Karpenter's default too);
// with no budget at all, nothing limits how many nodes move at once.
const DefaultBudget = "nodes=10%"

// DefaultOptions returns consolidation switched off, every other option at
// its documented default.
func DefaultOptions() Options {
	b, err := disruption.ParseBudget(DefaultBudget)
	if err != nil {
		panic(err) // a constant that parses
	}
	return Options{
		StableTime:                       10 * time.Minute,
		MinSavings:                       0.2,
		MinSavingsPerPod:                 0.01,
		MaxBatch:                         100,
		Budgets:                          []disruption.Budget{b},
		Drain:                            drain.DefaultOptions(),
		MaxCloudProviderNodeDeletionTime: 5 * time.Minute,
		Limits:                           limits.Default(),
	}
}

// GPUCostOptions returns the defaults with consolidation on: what the
// gpu-cost profile asks of consolidation.
func GPUCostOptions() Options {
	o := DefaultOptions()
	o.Enabled = true
	return o
}

// Validate reports every field that is out of range, naming the field, its
// flag and the value.
func (o *Options) Validate() error {
	var errs []error
	bad := func(field, flag, rule string, v any) {
		errs = append(errs, fmt.Errorf("consolidation option %s (--%s): %s, got %v", field, flag, rule, v))
	}
	if o.StableTime < 0 {
		bad("StableTime", "consolidation-stable-time", "must not be negative", o.StableTime)
	}
	if !(o.MinSavings >= 0 && o.MinSavings < 1) { // also catches NaN
		bad("MinSavings", "consolidation-min-savings", "must be at least 0 and below 1", o.MinSavings)
	}
	if !(o.MinSavingsPerPod >= 0 && o.MinSavingsPerPod <= MaxSavingsPerPod) { // also catches NaN and +Inf
		bad("MinSavingsPerPod", "consolidation-min-savings-per-pod", fmt.Sprintf("must be at least 0 and at most %g", float64(MaxSavingsPerPod)), o.MinSavingsPerPod)
	}
	if o.MaxBatch < 1 {
		bad("MaxBatch", "consolidation-max-batch", "must be at least 1", o.MaxBatch)
	}
	if o.MaxCloudProviderNodeDeletionTime < 0 {
		bad("MaxCloudProviderNodeDeletionTime", "max-cloud-provider-node-deletion-time", "must not be negative", o.MaxCloudProviderNodeDeletionTime)
	}
	own := disruption.Policy{Budgets: o.Budgets, Windows: o.Windows}
	if err := own.Validate("consolidation-budget", "consolidation-window"); err != nil {
		errs = append(errs, fmt.Errorf("consolidation options: %w", err))
	}
	if err := o.Disruption.Validate("disruption-budget", "disruption-window"); err != nil {
		errs = append(errs, fmt.Errorf("consolidation options: %w", err))
	}
	return errors.Join(errs...)
}
