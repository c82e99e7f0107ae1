package removal

import (
	"cmp"
	"fmt"

	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Exemption is why a node may never be disrupted voluntarily, whatever its
// pods: a stable code, the same for every caller.
type Exemption string

// Exemptions, in the order Exempt checks them (the Cluster Autoscaler's).
const (
	// ExemptScaleDownDisabled: the node is annotated
	// cluster-autoscaler.kubernetes.io/scale-down-disabled=true.
	ExemptScaleDownDisabled Exemption = "ScaleDownDisabledAnnotation"
	// ExemptDoNotDisrupt: the node is annotated gpuscale.dev/do-not-disrupt
	// or karpenter.sh/do-not-disrupt "true".
	ExemptDoNotDisrupt Exemption = "DoNotDisruptAnnotation"
	// ExemptNotAutoscaled: the node is in no node group the autoscaler
	// manages.
	ExemptNotAutoscaled Exemption = "NotAutoscaled"
)

// Exempt returns why node ni, whose managed node group is g (nil when it
// has none), may not be disrupted whatever its pods, with a message; or "".
// Scale-down and consolidation both ask it before weighing a node.
func Exempt(ni *snapshot.NodeInfo, g *snapshot.NodeGroup) (Exemption, string) {
	node := ni.Node
	switch {
	case node.Annotations[disruption.AnnotationScaleDownDisabled] == "true":
		return ExemptScaleDownDisabled, fmt.Sprintf("node is annotated %s=true", disruption.AnnotationScaleDownDisabled)
	case drain.DoNotDisrupt(node.Annotations) != "":
		return ExemptDoNotDisrupt, fmt.Sprintf("node is annotated %s=true", drain.DoNotDisrupt(node.Annotations))
	case g == nil && ni.Group == "":
		return ExemptNotAutoscaled, "node belongs to no node group"
	case g == nil:
		return ExemptNotAutoscaled, fmt.Sprintf("node group %s is not managed by the autoscaler", ni.Group)
	}
	return "", ""
}

// Rank is what the removal simulation orders candidates by (CompareRanks).
type Rank struct {
	// Empty: no pod of the node must move.
	Empty bool
	// Before: the node was found removable in the previous loop.
	Before bool
	// Util is the node's utilization as the caller weighs it.
	Util float64
	// Price is the node's hourly price; zero where the caller does not
	// weigh prices.
	Price float64
	Name  string
}

// CompareRanks orders candidates for the simulation: empty nodes first
// (they go at no risk), then those found removable in the previous loop (so
// that their clocks keep running when limits stop a loop early, rather than
// two nodes taking turns), then the least used, then the dearer, then by
// name.
func CompareRanks(x, y *Rank) int {
	if x.Empty != y.Empty {
		return trueFirst(x.Empty)
	}
	if x.Before != y.Before {
		return trueFirst(x.Before)
	}
	if c := cmp.Compare(x.Util, y.Util); c != 0 {
		return c
	}
	if c := cmp.Compare(y.Price, x.Price); c != 0 {
		return c
	}
	return cmp.Compare(x.Name, y.Name)
}

// trueFirst orders x, which differs from the other flag, true first.
func trueFirst(x bool) int {
	if x {
		return -1
	}
	return 1
}
