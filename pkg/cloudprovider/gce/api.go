package gce

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"
)

// RetryOptions bound the retries of calls that failed with 429 (rate
// limit), 500, 502, 503 or 504, or a network error. The compute client
// does not retry on its own; mutations carry a requestId, so the server
// applies a retried one once.
type RetryOptions struct {
	// Attempts is the most tries per call, the first included (default 4).
	Attempts int
	// Initial is the first wait, doubled each time up to Max (defaults 1s
	// and 16s). A Retry-After header within Max is honoured instead.
	Initial, Max time.Duration
}

func (r RetryOptions) withDefaults() RetryOptions {
	if r.Attempts <= 0 {
		r.Attempts = 4
	}
	if r.Initial <= 0 {
		r.Initial = time.Second
	}
	if r.Max < r.Initial {
		r.Max = max(16*time.Second, r.Initial)
	}
	return r
}

// api makes the Compute Engine calls the provider needs, retrying the
// transient failures and naming the call in every error.
type api struct {
	svc   *compute.Service
	retry RetryOptions
	clock clock.Clock
	// opTimeout bounds the wait for one operation.
	opTimeout time.Duration
	// callTimeout bounds each attempt of a call, so that an endpoint that
	// stops answering cannot hold the loop.
	callTimeout time.Duration
}

// do runs f until it succeeds, fails for good, or runs out of attempts;
// each attempt gets callTimeout.
func (a *api) do(ctx context.Context, call string, f func(context.Context) error) error {
	return a.doWithin(ctx, call, a.callTimeout, f)
}

// doWithin is do with a per-attempt timeout of its own; 0 sets none.
func (a *api) doWithin(ctx context.Context, call string, timeout time.Duration, f func(context.Context) error) error {
	wait := a.retry.Initial
	for attempt := 1; ; attempt++ {
		err := attemptWithin(ctx, timeout, f)
		if err == nil {
			return nil
		}
		if !isTransient(err) || attempt >= a.retry.Attempts || ctx.Err() != nil {
			if attempt > 1 {
				return fmt.Errorf("%s (after %d attempts): %w", call, attempt, err)
			}
			return fmt.Errorf("%s: %w", call, err)
		}
		d := wait
		if ra := retryAfter(err); ra > 0 && ra <= a.retry.Max {
			d = ra
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last error: %v)", call, ctx.Err(), err)
		case <-a.clock.After(d):
		}
		wait = min(2*wait, a.retry.Max)
	}
}

// attemptWithin runs f with ctx bounded by timeout (none when 0). An
// attempt that timed out (an endpoint that stopped answering) says so, and
// is not retried: isTransient does not retry deadlines.
func attemptWithin(ctx context.Context, timeout time.Duration, f func(context.Context) error) error {
	if timeout <= 0 {
		return f(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := f(actx)
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within the per-call timeout of %s: %w", timeout, err)
	}
	return err
}

// isTransient says whether retrying may help.
func isTransient(err error) bool {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		switch ge.Code {
		case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
			http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func retryAfter(err error) time.Duration {
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Header == nil {
		return 0
	}
	s, err2 := strconv.Atoi(ge.Header.Get("Retry-After"))
	if err2 != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// listPages calls a paginated list until its last page, each page
// through do (retried as any call), and returns every item in order.
// page fetches the page a token names: its items and the next token.
func listPages[T any](ctx context.Context, a *api, call string, page func(ctx context.Context, token string) ([]T, string, error)) ([]T, error) {
	var out []T
	token := ""
	for {
		var items []T
		next := ""
		err := a.do(ctx, call, func(ctx context.Context) (err error) {
			items, next, err = page(ctx, token)
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if token = next; token == "" {
			return out, nil
		}
	}
}

// listMIGs lists a zone's instance group managers, page by page.
func (a *api) listMIGs(ctx context.Context, project, zone string) ([]*compute.InstanceGroupManager, error) {
	call := fmt.Sprintf("instanceGroupManagers.list projects/%s/zones/%s", project, zone)
	return listPages(ctx, a, call, func(ctx context.Context, token string) ([]*compute.InstanceGroupManager, string, error) {
		page, err := a.svc.InstanceGroupManagers.List(project, zone).PageToken(token).Context(ctx).Do()
		if err != nil {
			return nil, "", err
		}
		return page.Items, page.NextPageToken, nil
	})
}

// listManagedInstances lists a group's instances, page by page.
func (a *api) listManagedInstances(ctx context.Context, ref MIGRef) ([]*compute.ManagedInstance, error) {
	return listPages(ctx, a, "instanceGroupManagers.listManagedInstances", func(ctx context.Context, token string) ([]*compute.ManagedInstance, string, error) {
		page, err := a.svc.InstanceGroupManagers.ListManagedInstances(ref.Project, ref.Zone, ref.Name).PageToken(token).Context(ctx).Do()
		if err != nil {
			return nil, "", err
		}
		return page.ManagedInstances, page.NextPageToken, nil
	})
}

// resize sets the group's target size and waits for the operation.
func (a *api) resize(ctx context.Context, ref MIGRef, size int64) error {
	call := fmt.Sprintf("instanceGroupManagers.resize size=%d", size)
	requestID := string(uuid.NewUUID())
	var op *compute.Operation
	err := a.do(ctx, call, func(ctx context.Context) (err error) {
		op, err = a.svc.InstanceGroupManagers.Resize(ref.Project, ref.Zone, ref.Name, size).
			RequestId(requestID).Context(ctx).Do()
		return err
	})
	if err != nil {
		return err
	}
	return a.wait(ctx, call, ref.Project, ref.Zone, op)
}

// deleteInstances removes instances from the group, lowering its target
// size by their number, and waits for the operation. Instances already
// gone are skipped rather than failing the others.
func (a *api) deleteInstances(ctx context.Context, ref MIGRef, instances []InstanceRef) error {
	names := make([]string, len(instances))
	paths := make([]string, len(instances))
	for i, in := range instances {
		names[i], paths[i] = in.Name, instancePath(in)
	}
	call := "instanceGroupManagers.deleteInstances " + strings.Join(names, ",")
	req := &compute.InstanceGroupManagersDeleteInstancesRequest{Instances: paths, SkipInstancesOnValidationError: true}
	requestID := string(uuid.NewUUID())
	var op *compute.Operation
	err := a.do(ctx, call, func(ctx context.Context) (err error) {
		op, err = a.svc.InstanceGroupManagers.DeleteInstances(ref.Project, ref.Zone, ref.Name, req).
			RequestId(requestID).Context(ctx).Do()
		return err
	})
	if err != nil {
		return err
	}
	return a.wait(ctx, call, ref.Project, ref.Zone, op)
}

// wait polls zoneOperations.wait (which itself blocks up to two minutes on
// the server) until the operation is DONE, then returns its error, if any.
func (a *api) wait(ctx context.Context, call, project, zone string, op *compute.Operation) error {
	ctx, cancel := context.WithTimeout(ctx, a.opTimeout)
	defer cancel()
	for op.Status != "DONE" {
		name := op.Name
		// zoneOperations.wait blocks on the server for up to two minutes:
		// the operation timeout bounds it, not the per-call one.
		err := a.doWithin(ctx, call+": zoneOperations.wait "+name, 0, func(ctx context.Context) (err error) {
			op, err = a.svc.ZoneOperations.Wait(project, zone, name).Context(ctx).Do()
			return err
		})
		if err != nil {
			return err
		}
	}
	if op.Error != nil && len(op.Error.Errors) > 0 {
		msgs := make([]string, len(op.Error.Errors))
		for i, e := range op.Error.Errors {
			msgs[i] = e.Code + ": " + e.Message
		}
		return fmt.Errorf("%s: operation %s failed: %s", call, op.Name, strings.Join(msgs, "; "))
	}
	return nil
}

// getTemplate reads a global or regional instance template by URL.
func (a *api) getTemplate(ctx context.Context, url string) (*compute.InstanceTemplate, error) {
	_, path, _ := strings.Cut(url, "projects/")
	parts := strings.Split(path, "/")
	var tmpl *compute.InstanceTemplate
	switch {
	case len(parts) == 4 && parts[1] == "global" && parts[2] == "instanceTemplates":
		err := a.do(ctx, "instanceTemplates.get "+parts[3], func(ctx context.Context) (err error) {
			tmpl, err = a.svc.InstanceTemplates.Get(parts[0], parts[3]).Context(ctx).Do()
			return err
		})
		return tmpl, err
	case len(parts) == 5 && parts[1] == "regions" && parts[3] == "instanceTemplates":
		err := a.do(ctx, "regionInstanceTemplates.get "+parts[4], func(ctx context.Context) (err error) {
			tmpl, err = a.svc.RegionInstanceTemplates.Get(parts[0], parts[2], parts[4]).Context(ctx).Do()
			return err
		})
		return tmpl, err
	}
	return nil, fmt.Errorf("instance template URL %q: want .../projects/P/global/instanceTemplates/NAME or .../projects/P/regions/R/instanceTemplates/NAME", url)
}

// getMachineType reads a machine type the built-in table does not know.
func (a *api) getMachineType(ctx context.Context, project, zone, name string) (*compute.MachineType, error) {
	var mt *compute.MachineType
	err := a.do(ctx, "machineTypes.get "+name, func(ctx context.Context) (err error) {
		mt, err = a.svc.MachineTypes.Get(project, zone, name).Context(ctx).Do()
		return err
	})
	return mt, err
}

// RegionZones lists the zones of a region that are up, sorted by name: the
// default places for auto-discovery.
func RegionZones(ctx context.Context, svc *compute.Service, project, region string) ([]string, error) {
	a := &api{svc: svc, retry: RetryOptions{}.withDefaults(), clock: clock.RealClock{}, callTimeout: DefaultCallTimeout}
	var zones []string
	token := ""
	for {
		var page *compute.ZoneList
		err := a.do(ctx, "zones.list projects/"+project, func(ctx context.Context) (err error) {
			page, err = svc.Zones.List(project).Filter(`name eq "` + region + `-.*"`).PageToken(token).Context(ctx).Do()
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, z := range page.Items {
			if z.Status == "UP" && strings.HasPrefix(z.Name, region+"-") {
				zones = append(zones, z.Name)
			}
		}
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if len(zones) == 0 {
		return nil, fmt.Errorf("zones.list projects/%s: no zone of region %q is up", project, region)
	}
	slices.Sort(zones)
	return zones, nil
}
