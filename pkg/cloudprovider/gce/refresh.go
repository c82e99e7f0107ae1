package gce

import (
	"context"
	"fmt"
	"sort"
	"strings"

	compute "google.golang.org/api/compute/v1"
)

// location is a project and zone whose MIGs are listed together.
type location struct{ project, zone string }

// candidate is a group to serve, with its bounds and its listing.
type candidate struct {
	ref      MIGRef
	min, max int
	igm      *compute.InstanceGroupManager
}

// loaded is what one refresh found.
type loaded struct {
	groups    map[string]*group
	instances map[InstanceRef]string
	failing   map[string][]instanceFailure
	problems  []GroupProblem
}

// Refresh reloads sizes, instances and new templates, unless the last
// refresh is younger than the refresh interval and no change failed since.
// A transient failure fails it and keeps the previous state; bad groups
// are left out and reported.
//
// The API calls run without the cache lock: reads go on serving the
// previous listing, and the new one is swapped in whole at the end. A
// group changed through the provider while the listing ran keeps its
// cached size and creating instances, which may be newer than what was
// listed, and is listed again at the next Refresh.
func (p *Provider) Refresh(ctx context.Context) error {
	if err := p.refreshing.lock(ctx); err != nil {
		return fmt.Errorf("gce: refresh: waiting for the refresh under way: %w", err)
	}
	defer p.refreshing.unlock()
	p.mu.RLock()
	now := p.clock.Now()
	due := p.stale || p.lastRefresh.IsZero() || now.Sub(p.lastRefresh) >= p.interval
	start := p.changes
	p.mu.RUnlock()
	if !due {
		return nil
	}
	l, err := p.load(ctx)
	if err != nil {
		return fmt.Errorf("gce: refresh: %w", err)
	}
	p.pruneShapes(l)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.applyLocked(l, start)
	p.lastRefresh = now
	return nil
}

// load lists everything; it runs with refreshing held and mu not held.
func (p *Provider) load(ctx context.Context) (*loaded, error) {
	l := &loaded{groups: map[string]*group{}, instances: map[InstanceRef]string{}, failing: map[string][]instanceFailure{}}
	l.problems = append(l.problems, p.badInputs...)
	cands, err := p.candidates(ctx, l)
	if err != nil {
		return nil, err
	}
	for _, c := range cands {
		g, err := p.loadGroup(ctx, c, l)
		switch {
		case err != nil && isTransient(err):
			return nil, fmt.Errorf("node group %s: %w", c.ref, err)
		case err != nil:
			l.problems = append(l.problems, GroupProblem{Group: c.ref.URL(), Err: fmt.Errorf("node group %s: %w", c.ref, err)})
		default:
			l.groups[c.ref.URL()] = g
		}
	}
	sortProblems(l.problems)
	return l, nil
}

// candidates lists every zone in play once and picks the static groups
// and the discovered ones, sorted by URL.
func (p *Provider) candidates(ctx context.Context, l *loaded) ([]candidate, error) {
	locs := map[location]bool{}
	for ref := range p.static {
		locs[location{ref.Project, ref.Zone}] = true
	}
	if len(p.discover) > 0 {
		for _, z := range p.cfg.Zones {
			locs[location{p.cfg.Project, z}] = true
		}
	}
	sorted := make([]location, 0, len(locs))
	for loc := range locs {
		sorted = append(sorted, loc)
	}
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].project != sorted[j].project {
			return sorted[i].project < sorted[j].project
		}
		return sorted[i].zone < sorted[j].zone
	})
	byRef := map[MIGRef]candidate{}
	for _, loc := range sorted {
		igms, err := p.api.listMIGs(ctx, loc.project, loc.zone)
		if err != nil && isTransient(err) {
			return nil, err
		}
		listed := map[string]*compute.InstanceGroupManager{}
		for _, igm := range igms {
			listed[igm.Name] = igm
		}
		for ref, s := range p.static {
			if ref.Project != loc.project || ref.Zone != loc.zone {
				continue
			}
			switch {
			case err != nil:
				l.problems = append(l.problems, GroupProblem{Group: ref.URL(), Err: fmt.Errorf("node group %s: %w", ref, err)})
			case listed[ref.Name] == nil:
				l.problems = append(l.problems, GroupProblem{Group: ref.URL(), Err: fmt.Errorf("node group %s: managed instance group %s not found in projects/%s/zones/%s", ref, ref.Name, ref.Project, ref.Zone)})
			default:
				byRef[ref] = candidate{ref: ref, min: s.Min, max: s.Max, igm: listed[ref.Name]}
			}
		}
		if len(p.discover) == 0 || loc.project != p.cfg.Project {
			continue
		}
		if err != nil {
			for _, d := range p.discover {
				l.problems = append(l.problems, GroupProblem{Group: "mig:namePrefix=" + d.NamePrefix, Err: fmt.Errorf("auto-discovery in zone %s: %w", loc.zone, err)})
			}
			continue
		}
		p.discoverIn(loc, igms, byRef)
	}
	out := make([]candidate, 0, len(byRef))
	for _, c := range byRef {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ref.URL() < out[j].ref.URL() })
	return out, nil
}

// discoverIn adds the zone's MIGs whose names match a prefix; the first
// matching spec gives the bounds, and static groups keep theirs.
func (p *Provider) discoverIn(loc location, igms []*compute.InstanceGroupManager, byRef map[MIGRef]candidate) {
	for _, igm := range igms {
		ref := MIGRef{Project: loc.project, Zone: loc.zone, Name: igm.Name}
		if _, static := p.static[ref]; static {
			continue
		}
		for _, d := range p.discover {
			if strings.HasPrefix(igm.Name, d.NamePrefix) {
				byRef[ref] = candidate{ref: ref, min: d.Min, max: d.Max, igm: igm}
				break
			}
		}
	}
}

// loadGroup reads the template (once per URL) and the instances.
func (p *Provider) loadGroup(ctx context.Context, c candidate, l *loaded) (*group, error) {
	tmplURL := instanceTemplateOf(c.igm)
	if tmplURL == "" {
		return nil, fmt.Errorf("managed instance group %s has no instance template", c.ref.Name)
	}
	shape, ok := p.shapes[tmplURL]
	if !ok {
		tmpl, err := p.api.getTemplate(ctx, tmplURL)
		if err != nil {
			return nil, err
		}
		if shape, err = shapeFromTemplate(ctx, tmpl, c.ref.Zone, p.cfg.Prices, p.machineType(c.ref.Project)); err != nil {
			return nil, err
		}
		p.shapes[tmplURL] = shape
	}
	mis, err := p.api.listManagedInstances(ctx, c.ref)
	if err != nil {
		return nil, err
	}
	id := c.ref.URL()
	g := &group{ref: c.ref, min: c.min, max: c.max, target: int(c.igm.TargetSize), shape: shape, templateURL: tmplURL,
		options: p.cfg.NodeGroupOptions.forGroup(c.ref.Name)}
	g.node = shape.node(id, c.ref.Zone, gkeNodePoolName(c.ref.Name, p.cfg.ClusterName))
	for _, mi := range mis {
		if mi.Instance == "" {
			continue // not named yet: nothing to map or delete
		}
		in, err := parseInstanceURL(mi.Instance)
		if err != nil {
			return nil, err
		}
		l.instances[in] = id
		g.instances = append(g.instances, snapshotInstance(in, mi))
		if !isPendingCreation(mi) {
			continue
		}
		code, msg, failed := creationError(mi)
		if failed {
			l.failing[id] = append(l.failing[id], instanceFailure{instance: mi.Name, code: code, message: msg})
		}
		g.pending = append(g.pending, pendingInstance{ref: in, failed: failed})
	}
	if g.options.TakesQueued() {
		if g.queued, err = p.api.queuedRequests(ctx, c.ref); err != nil {
			return nil, err
		}
	}
	sort.Slice(g.instances, func(i, j int) bool { return g.instances[i].ProviderID < g.instances[j].ProviderID })
	sort.Slice(g.pending, func(i, j int) bool {
		a, b := g.pending[i], g.pending[j]
		if a.failed != b.failed {
			return a.failed
		}
		return a.ref.Name < b.ref.Name
	})
	return g, nil
}

// instanceTemplateOf is the group's template: the top-level one, or, for
// a group defined by versions only, the first version's: one template node
// describes the group.
func instanceTemplateOf(igm *compute.InstanceGroupManager) string {
	if igm.InstanceTemplate != "" {
		return igm.InstanceTemplate
	}
	for _, v := range igm.Versions {
		if v != nil && v.InstanceTemplate != "" {
			return v.InstanceTemplate
		}
	}
	return ""
}

// machineType looks up unknown machine types with machineTypes.get, once
// per zone and name.
func (p *Provider) machineType(project string) machineTypeSource {
	return func(ctx context.Context, zone, name string) (MachineType, error) {
		key := project + "/" + zone + "/" + name
		if mt, ok := p.machines[key]; ok {
			return mt, nil
		}
		got, err := p.api.getMachineType(ctx, project, zone, name)
		if err != nil {
			return MachineType{}, err
		}
		mt := machineTypeFromAPI(got)
		if mt.VCPUs <= 0 || mt.MemoryMiB <= 0 {
			return MachineType{}, fmt.Errorf("machineTypes.get %s: no vCPUs or memory in the answer", name)
		}
		p.machines[key] = mt
		return mt, nil
	}
}

// pruneShapes drops the templates no listed group uses; it runs with
// refreshing held.
func (p *Provider) pruneShapes(l *loaded) {
	used := map[string]bool{}
	for _, g := range l.groups {
		used[g.templateURL] = true
	}
	for url := range p.shapes {
		if !used[url] {
			delete(p.shapes, url)
		}
	}
}

// applyLocked swaps in a refresh that started when the change count was
// start, reports new failures, and logs problems that appeared or went
// away.
func (p *Provider) applyLocked(l *loaded, start uint64) {
	raced := false
	for id, g := range l.groups {
		old := p.groups[id]
		if old == nil || (p.running[id] == 0 && p.changedAt[id] <= start) {
			continue
		}
		// A change began or ended while the listing ran, so the listing
		// may hold the size from before it (an old target would undo a
		// resize) or from after it while the change is still to update
		// the cache (it would count a deletion twice). The cache is what
		// the provider did: keep it, and list the group again next time.
		g.target, g.pending, g.instances, g.queued = old.target, old.pending, old.instances, old.queued
		raced = true
	}
	for id := range p.groups {
		if l.groups[id] == nil {
			p.failures.forget(id)
		}
	}
	p.groups, p.instances = l.groups, l.instances
	p.order = p.order[:0]
	for id := range l.groups {
		p.order = append(p.order, id)
	}
	sort.Strings(p.order)
	for _, id := range p.order {
		p.failures.observe(id, l.failing[id])
	}
	// Later refreshes start after every change recorded so far.
	clear(p.changedAt)
	p.stale = raced
	p.logProblemChangesLocked(l.problems)
	p.problems = l.problems
}

func (p *Provider) logProblemChangesLocked(now []GroupProblem) {
	before := map[string]string{}
	for _, pr := range p.problems {
		before[pr.Group] = pr.Err.Error()
	}
	after := map[string]bool{}
	for _, pr := range now {
		after[pr.Group] = true
		if before[pr.Group] != pr.Err.Error() {
			p.log.Error("node group left out", "group", pr.Group, "err", pr.Err)
		}
	}
	for _, pr := range p.problems {
		if !after[pr.Group] {
			p.log.Info("node group problem resolved", "group", pr.Group)
		}
	}
}
