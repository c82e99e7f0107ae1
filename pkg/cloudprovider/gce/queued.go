package gce

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

var _ cloudprovider.QueuedCapacity = (*Provider)(nil)

// RequestQueued asks a group with queued provisioning (a GKE flex-start
// node pool's MIG) for count instances through a resize request: the MIG
// creates them all together when Compute Engine has the capacity, and
// deletes them runDuration after (the request's requestedRunDuration; 0
// leaves it to Compute Engine). A request of that name already there is
// not an error: asking again after a restart finds the first one.
func (p *Provider) RequestQueued(ctx context.Context, id, name string, count int, runDuration time.Duration) error {
	if count <= 0 {
		return fmt.Errorf("gce: node group %s: queued request %s: count must be positive, got %d", id, name, count)
	}
	return p.change(ctx, id, func(g *group) (changeStep, error) {
		if g.options == nil || g.options.QueuedProvisioning == nil || !*g.options.QueuedProvisioning {
			return changeStep{}, fmt.Errorf("gce: node group %s: queued request %s: the group takes no queued capacity (set its %s option)",
				id, name, cloudprovider.OptionQueuedProvisioning)
		}
		if g.target+count > g.max {
			return changeStep{}, fmt.Errorf("gce: node group %s: queued request %s: target %d + %d is above max %d", id, name, g.target, count, g.max)
		}
		ref := g.ref
		return changeStep{
			call: func(ctx context.Context) error { return p.api.insertResizeRequest(ctx, ref, name, count, runDuration) },
			apply: func(g *group) {
				if !slices.ContainsFunc(g.queued, func(q snapshot.QueuedRequest) bool { return q.Name == name }) {
					g.queued = append(slices.Clone(g.queued), snapshot.QueuedRequest{Name: name, Count: count, State: snapshot.QueuedWaiting})
				}
			},
		}, nil
	})
}

// insertResizeRequest makes a resize request and waits for the operation
// that accepts it (not for the capacity). One that exists already is
// taken as made.
func (a *api) insertResizeRequest(ctx context.Context, ref MIGRef, name string, count int, runDuration time.Duration) error {
	call := fmt.Sprintf("instanceGroupManagerResizeRequests.insert %s resizeBy=%d", name, count)
	rr := &compute.InstanceGroupManagerResizeRequest{Name: name, ResizeBy: int64(count),
		Description: "gpuscale: queued capacity for a ProvisioningRequest"}
	if runDuration > 0 {
		rr.RequestedRunDuration = &compute.Duration{Seconds: int64(runDuration / time.Second)}
	}
	requestID := string(uuid.NewUUID())
	var op *compute.Operation
	err := a.do(ctx, call, func(ctx context.Context) (err error) {
		op, err = a.svc.InstanceGroupManagerResizeRequests.Insert(ref.Project, ref.Zone, ref.Name, rr).
			RequestId(requestID).Context(ctx).Do()
		return err
	})
	var gerr *googleapi.Error
	if errors.As(err, &gerr) && gerr.Code == http.StatusConflict {
		return nil
	}
	if err != nil {
		return err
	}
	return a.wait(ctx, call, ref.Project, ref.Zone, op)
}

// listResizeRequests lists a group's resize requests, page by page.
func (a *api) listResizeRequests(ctx context.Context, ref MIGRef) ([]*compute.InstanceGroupManagerResizeRequest, error) {
	return listPages(ctx, a, "instanceGroupManagerResizeRequests.list "+ref.Name,
		func(ctx context.Context, token string) ([]*compute.InstanceGroupManagerResizeRequest, string, error) {
			page, err := a.svc.InstanceGroupManagerResizeRequests.List(ref.Project, ref.Zone, ref.Name).PageToken(token).Context(ctx).Do()
			if err != nil {
				return nil, "", err
			}
			return page.Items, page.NextPageToken, nil
		})
}

// queuedRequests lists a queued group's resize requests as the core sees
// them, sorted by name; requests being deleted are left out.
func (a *api) queuedRequests(ctx context.Context, ref MIGRef) ([]snapshot.QueuedRequest, error) {
	rrs, err := a.listResizeRequests(ctx, ref)
	if err != nil {
		return nil, err
	}
	var out []snapshot.QueuedRequest
	for _, rr := range rrs {
		q := snapshot.QueuedRequest{Name: rr.Name, Count: int(rr.ResizeBy)}
		switch rr.State {
		case "CREATING", "ACCEPTED":
			q.State = snapshot.QueuedWaiting
		case "SUCCEEDED":
			q.State = snapshot.QueuedProvisioned
		case "FAILED", "CANCELLED":
			q.State, q.Message = snapshot.QueuedFailed, resizeRequestError(rr)
		default:
			continue
		}
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b snapshot.QueuedRequest) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// resizeRequestError is what Compute Engine said of a failed or cancelled
// resize request.
func resizeRequestError(rr *compute.InstanceGroupManagerResizeRequest) string {
	if rr.State == "CANCELLED" {
		return "cancelled"
	}
	var msgs []string
	if rr.Status != nil && rr.Status.Error != nil {
		for _, e := range rr.Status.Error.Errors {
			msgs = append(msgs, e.Code+": "+e.Message)
		}
	}
	if len(msgs) == 0 {
		return "failed"
	}
	return strings.Join(msgs, "; ")
}
