// Package cloudprovider is the boundary between the autoscaler and the
// infrastructure that adds and removes nodes: AWS Auto Scaling groups, GCE
// managed instance groups, or kwok (Node objects in a local cluster). The
// interface is small on purpose; optional abilities are separate interfaces
// found by type assertion.
package cloudprovider

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// CloudProvider manages node groups.
type CloudProvider interface {
	// Name is the --cloud-provider value ("aws", "gce", "kwok").
	Name() string
	// Refresh reloads groups and sizes from the provider; the loop calls it
	// once per iteration before NodeGroups.
	Refresh(ctx context.Context) error
	// NodeGroups returns the managed groups with their min, max and
	// current target size, and a template node for scale-up (from zero
	// included), sorted by id.
	NodeGroups() []snapshot.NodeGroup
	// NodeGroupForNode returns the id of the group a node belongs to, or ""
	// when the node is not managed (it is then never scaled down).
	NodeGroupForNode(node *v1.Node) (string, error)
	// IncreaseSize raises a group's target size by delta (> 0).
	IncreaseSize(ctx context.Context, group string, delta int) error
	// DeleteNodes removes nodes of a group and lowers its target size by
	// their number.
	DeleteNodes(ctx context.Context, group string, nodes []*v1.Node) error
	// DecreaseTargetSize lowers a group's target size by delta (> 0) for
	// nodes that were requested but never registered; it never deletes a
	// registered node.
	DecreaseTargetSize(ctx context.Context, group string, delta int) error
}

// ErrNotFound is wrapped by errors about groups or nodes the provider does
// not know.
var ErrNotFound = errors.New("not found")

// FailedCreations are nodes a group asked for but the cloud will not
// create: out of capacity in the zone, over quota, a bad launch template.
// Count of them stay in the group's target until the autoscaler lowers it.
type FailedCreations struct {
	Group string
	Count int
	// Class is ErrorOutOfResources, ErrorQuota or ErrorOther.
	Class string
	// Code and Message are the cloud's own (for example
	// "InsufficientInstanceCapacity", "ZONE_RESOURCE_POOL_EXHAUSTED").
	Code, Message string
	// Zone is the zone the cloud named in its answer, "" when it named
	// none: an out-of-capacity answer then backs off every group launching
	// the same instance type in that zone.
	Zone string
}

// Classes of FailedCreations.
const (
	ErrorOutOfResources = "OutOfResources"
	ErrorQuota          = "Quota"
	ErrorOther          = "Other"
)

// CreationFailureReporter is implemented by providers that can see failed
// node creations. After each Refresh the loop backs the group off (so the
// expander picks the next option), lowers its target by Count with
// DecreaseTargetSize, and reports the failure. A provider reports each
// failure once.
type CreationFailureReporter interface {
	FailedCreations() []FailedCreations
}

// QueuedCapacity is a provider whose groups can take queued capacity: a
// request for a whole count of nodes that the cloud fills all at once
// when it has them (GKE's resize requests of flex-start node pools, the
// groups with the queuedprovisioning option).
type QueuedCapacity interface {
	// RequestQueued asks for count nodes of group in one request named
	// name; the cloud deletes them runDuration after they start (0: the
	// cloud's default). Asking again under a name the cloud holds is not
	// an error. From then on the group's NodeGroup lists the request in
	// Queued, and the cloud raises the group's target when it grants it.
	RequestQueued(ctx context.Context, group, name string, count int, runDuration time.Duration) error
}

// NodeInterruption is an instance the cloud said it is taking away.
type NodeInterruption struct {
	// InstanceID is the last segment of the node's providerID.
	InstanceID string
	// TaintKey is the interruption taint the shell puts on the node, one
	// of the interruption signals the core knows.
	TaintKey string
	// Reason says what the cloud said, for logs and events.
	Reason string
}

// InterruptionReporter is implemented by providers that read the cloud's
// interruption events (the AWS provider's EC2 interruption queue). After
// each Refresh the shell taints the nodes named: the core then sees them
// as it sees any interruption taint. A provider reports each event once.
type InterruptionReporter interface {
	Interruptions() []NodeInterruption
}
