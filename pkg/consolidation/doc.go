// Package consolidation plans moves that make a cluster cheaper while its
// pods keep running: delete a node whose pods fit on the others, whatever
// its utilization, or replace nodes by fewer or cheaper new ones, across
// groups, GPU-aware. It is part of the pure decision core: a Planner takes a
// snapshot, the PodDisruptionBudgets, the removals and replacements in
// flight, a clock reading and the previous pass's State, and returns a Plan
// (moves to carry out, moves that wait, a reason for every node kept, the
// next State). It does no I/O and keeps nothing between passes but working
// memory.
//
// # A pass
//
//  1. Nodes are classified once: which may take pods (Ready, GPUs
//     advertised, not being removed or replaced) and which may move (not
//     annotated scale-down-disabled or do-not-disrupt, in a managed group
//     inside its maintenance windows, with disruption budget left); every
//     pod of a candidate is judged by the drain rules (pkg/scaledown/drain,
//     with do-not-disrupt added) and a candidate with a pod that cannot
//     move is kept.
//  2. Deletions: candidates in order (empty nodes, nodes already found
//     consolidatable, then the least used, GPU nodes by their GPUs) are
//     taken out of the snapshot one by one and their pods placed on the
//     remaining nodes with the scheduler's checks (pkg/scaledown/removal,
//     the simulation scale-down uses). A deletion carried out stays in the
//     snapshot, so later ones cannot count on the node and do count the
//     moved pods; one that waits for StableTime is undone, so nothing else
//     relies on it, and its node takes no pods of later moves (they would
//     move twice, or trade a full node for an identical empty one).
//  3. One replacement: the best multi-node one among nodes of one kind
//     (GPU type, or no GPU), else the first single node that a cheaper node
//     can replace. Pods go to remaining nodes where they fit and to new
//     nodes of one group otherwise (packed by pkg/estimator), and the new
//     nodes must save MinSavings within the group's maximum and the
//     cluster's limits counted with the old nodes still running. One a
//     pass, weighed after every deletion, so it is planned on the cluster
//     as it will be when its new nodes are Ready.
//
// Destinations are ordered for GPUs: pods that ask for GPUs try the GPU
// nodes with the fewest free GPUs first, so free GPUs gather whole on fewer
// nodes; CPU-only pods try nodes without GPUs first, so they leave GPU nodes
// rather than keep them.
//
// # Defaults, and why
//
// Enabled is false: the upstream-compatible defaults never disrupt a node
// that is used above the scale-down thresholds, and users switching from the
// Cluster Autoscaler must not find their pods moved. The gpu-cost profile
// turns it on with every other default as below; none is tuned to a trace.
//
//   - StableTime 10m: a node is moved only once every pass for ten minutes
//     found it consolidatable. It is the wait --scale-down-unneeded-time asks
//     of an idle node, for the same reason (load that left may come back), and
//     consolidation disrupts running pods, so it should not be quicker to act.
//   - MinSavings 0.2: a replacement bills old and new nodes together while the
//     new ones boot and the pods move, restarts every pod it moves, and rests
//     on list prices that differ by a few percent between generations and
//     zones. A fifth off the hourly price pays back a boot of several minutes
//     within the hour; smaller gains are within the noise. Deletions always
//     save a whole node and need no fraction.
//   - MinSavingsPerPod 0.01: every move, deletions too, must save a cent an
//     hour for each pod it evicts, the threshold proposed for Karpenter's
//     consolidation: a restart costs the pod's owner what no price list
//     shows, so many pods are not moved for a small node's price.
//   - SpotReplacements off: replacing on-demand nodes by spot ones trades
//     availability for price; that is a choice of policy a user makes, not one
//     a price comparison should make for them.
//   - Budgets "nodes=10%": Karpenter's default, which GPU teams moving over
//     know; rounded up so a small group can still move one node at a time.
//   - MaxBatch 100: the most nodes one multi-node replacement weighs, as
//     Karpenter bounds it; larger batches add trials, not savings, since a
//     batch's leftover pods must fit new nodes of a single group.
//
// # State
//
// The only state across passes is State.Since (since when each node has
// been found consolidatable), passed in and returned. Replacements in
// flight are the loop's: it passes them in as Input.Replacing until their
// old nodes are drained.
package consolidation
