// Package disruption holds the limits every voluntary disruption of a node
// obeys, whichever planner proposes it: scale-down removing an unneeded
// node, consolidation deleting or replacing nodes, node repair removing a
// node whose accelerators failed. An operator states them
// once, as budgets (how many nodes of a group may be disrupted at once) and
// maintenance windows (when a group may be disrupted at all), and each
// planner asks the same Policy before it disrupts a node. Pods and nodes
// annotated do-not-disrupt are the drain rules' business
// (pkg/scaledown/drain), which every planner runs.
//
// The zero Policy limits nothing, which is the Cluster Autoscaler's
// behaviour: its scale-down is bounded only by its parallelism flags.
// Involuntary losses (a node that is gone, a spot interruption) are not
// disruptions in this sense and are never held back by a Policy; draining
// a node whose GPUs failed is, since its pods still run there and the
// operator chooses when they move.
//
// The package is pure and a leaf of the decision core: no I/O, no clock
// but the time it is given.
package disruption
