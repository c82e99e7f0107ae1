// Package scaleup turns unschedulable pods into a node-group scale-up plan:
// pods are grouped into equivalence classes, those that fit on existing or
// upcoming nodes are set aside, each group's template is bin-packed, the
// expanders choose, similar groups share the work, and every pod left
// pending gets a reason per group.
package scaleup

import (
	"fmt"
	"time"

	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/limits"
)

// Options carry the scale-up flags; DefaultOptions has the upstream defaults.
type Options struct {
	// Expander is the --expander chain, e.g. "priority,least-waste".
	Expander string
	// Priorities is the parsed priority ConfigMap, for the priority expander.
	Priorities *expander.Priorities
	// Seed drives the expanders' random tie-break.
	Seed int64
	// MaxNodesPerScaleUp caps one scale-up (--max-nodes-per-scaleup, 1000).
	MaxNodesPerScaleUp int
	Limits             limits.Limits
	// BalanceSimilarNodeGroups spreads a scale-up over similar groups
	// (--balance-similar-node-groups).
	BalanceSimilarNodeGroups bool
	// BalancingIgnoreLabels are labels that may differ between similar
	// groups, besides zone and hostname (--balancing-ignore-label).
	BalancingIgnoreLabels []string
	// ExpendablePodsPriorityCutoff: pods below it never trigger a scale-up
	// (--expendable-pods-priority-cutoff, -10).
	ExpendablePodsPriorityCutoff int32
	// NewPodScaleUpDelay ignores pods younger than this (--new-pod-scale-up-delay, 0s).
	NewPodScaleUpDelay time.Duration
}

// DefaultOptions are the upstream defaults.
func DefaultOptions() Options {
	return Options{
		Expander:                     "random",
		MaxNodesPerScaleUp:           1000,
		Limits:                       limits.Default(),
		ExpendablePodsPriorityCutoff: -10,
	}
}

// Validate names the first option that cannot work.
func (o Options) Validate() error {
	switch {
	case o.MaxNodesPerScaleUp <= 0:
		return fmt.Errorf("--max-nodes-per-scaleup: must be positive, got %d", o.MaxNodesPerScaleUp)
	case o.NewPodScaleUpDelay < 0:
		return fmt.Errorf("--new-pod-scale-up-delay: must not be negative, got %s", o.NewPodScaleUpDelay)
	case o.Limits.MaxNodesTotal < 0:
		return fmt.Errorf("--max-nodes-total: must not be negative, got %d", o.Limits.MaxNodesTotal)
	}
	_, err := expander.NewChain(o.Expander, expander.Config{Priorities: o.Priorities})
	return err
}
