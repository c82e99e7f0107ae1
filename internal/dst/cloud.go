package dst

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// LabelGroup names a simulated node's group.
const LabelGroup = "dst.gpuscale.dev/group"

// Cloud is the cloud model: node groups whose instances come up when a
// kubelet registers them (cluster.go), and calls that can fail, be
// throttled, answer late or lose their answer (faults.go). Every
// autoscaler instance reaches it through a view of its own (cloudView),
// so calls are known by their caller.
type Cloud struct {
	world *World
	opts  WorldOptions

	mu        sync.Mutex
	groups    map[string]*cloudGroup
	instances []*cloudInstance
	serial    int
}

type cloudGroup struct {
	id       string
	min, max int
	target   int
}

type cloudInstance struct {
	id, group string
	created   time.Time
	// never marks an instance whose kubelet never registers.
	never bool
	// node is the registered Node's name, "" until then.
	node string
}

func newCloud(w *World, o WorldOptions) *Cloud {
	c := &Cloud{world: w, opts: o, groups: map[string]*cloudGroup{}}
	for _, g := range o.Groups {
		c.groups[g.ID] = &cloudGroup{id: g.ID, min: g.Min, max: g.Max}
	}
	return c
}

// template is a node of group g as it registers.
func (c *Cloud) template(g GroupSpec, name string) *v1.Node {
	n := builder.Node(name).CPU(fmt.Sprint(g.CPUs)).Memory("16Gi").GPU(int64(g.GPUs)).Label(LabelGroup, g.ID).Build()
	n.Spec.ProviderID = "dst://" + name
	return n
}

func (c *Cloud) spec(group string) GroupSpec {
	for _, g := range c.opts.Groups {
		if g.ID == group {
			return g
		}
	}
	return GroupSpec{}
}

// view is instance id's connection to the cloud.
func (c *Cloud) view(id string) *cloudView { return &cloudView{cloud: c, id: id} }

// groupsNow is the groups as the cloud holds them, sorted by id.
func (c *Cloud) groupsNow() []snapshot.NodeGroup {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []snapshot.NodeGroup
	for _, g := range c.opts.Groups {
		cg := c.groups[g.ID]
		ng := snapshot.NodeGroup{ID: g.ID, MinSize: cg.min, MaxSize: cg.max, TargetSize: cg.target,
			Template: c.template(g, "template-"+g.ID), InstancesListed: true}
		for _, in := range c.instances {
			if in.group == g.ID {
				ng.Instances = append(ng.Instances, snapshot.Instance{ProviderID: "dst://" + in.id, CreatedAt: in.created})
			}
		}
		out = append(out, ng)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// cloudView implements cloudprovider.CloudProvider for one instance.
type cloudView struct {
	cloud *Cloud
	id    string

	mu     sync.Mutex
	groups []snapshot.NodeGroup
}

var _ cloudprovider.CloudProvider = (*cloudView)(nil)

func (v *cloudView) Name() string { return "dst" }

// call runs a cloud call through the armed faults: refused, failed,
// throttled, done late, or done with its answer lost.
func (v *cloudView) call(ctx context.Context, method, object string, write bool, do func() error) error {
	w := v.cloud.world
	if w.refused(v.id) {
		return fmt.Errorf("instance %s was killed", v.id)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f := w.faults.take(method, object, false)
	ev := Event{Step: w.currentStep(), At: w.clock.Now(), Instance: v.id, Kind: EventCloudWrite, Verb: method,
		Resource: "cloud", Object: object, Deposed: w.deposed(v.id)}
	record := func(result string) {
		if write {
			ev.Result = result
			w.hist.add(ev)
		}
	}
	if f != nil && (f.Kind == FaultCloudFail || f.Kind == FaultCloudThrottle) {
		record(f.Kind.String())
		return f.cloudError(method)
	}
	err := do()
	record(resultOf(err))
	if err != nil || f == nil {
		return err
	}
	if f.Kind == FaultCloudLostReply {
		return f.cloudError(method)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-w.clock.After(f.Delay):
		return nil
	}
}

func (v *cloudView) Refresh(ctx context.Context) error {
	return v.call(ctx, "Refresh", "", false, func() error {
		g := v.cloud.groupsNow()
		v.mu.Lock()
		v.groups = g
		v.mu.Unlock()
		return nil
	})
}

func (v *cloudView) NodeGroups() []snapshot.NodeGroup {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]snapshot.NodeGroup(nil), v.groups...)
}

func (v *cloudView) NodeGroupForNode(n *v1.Node) (string, error) { return n.Labels[LabelGroup], nil }

func (v *cloudView) IncreaseSize(ctx context.Context, group string, delta int) error {
	return v.call(ctx, "IncreaseSize", group, true, func() error { return v.cloud.increase(v.id, group, delta) })
}

func (v *cloudView) DeleteNodes(ctx context.Context, group string, nodes []*v1.Node) error {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return v.call(ctx, "DeleteNodes", strings.Join(names, ","), true, func() error {
		return v.cloud.delete(v.id, group, nodes)
	})
}

func (v *cloudView) DecreaseTargetSize(ctx context.Context, group string, delta int) error {
	return v.call(ctx, "DecreaseTargetSize", group, true, func() error { return v.cloud.decrease(group, delta) })
}

// increase orders delta instances, recording what the cluster looked like
// then for the scale-up invariants.
func (c *Cloud) increase(by, group string, delta int) error {
	w := c.world
	pending := w.waitingAsSeen(c.spec(group))
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[group]
	if !ok {
		return fmt.Errorf("group %s: %w", group, cloudprovider.ErrNotFound)
	}
	if delta <= 0 || g.target+delta > g.max {
		return fmt.Errorf("group %s: cannot raise the target %d by %d past the maximum %d", group, g.target, delta, g.max)
	}
	// Upcoming counts the group's own instances on their way: each can
	// take any pod this scale-up is for.
	upcoming := 0
	for _, in := range c.instances {
		if in.group == group && in.node == "" && w.clock.Since(in.created) < c.opts.ProvisionTime {
			upcoming++
		}
	}
	g.target += delta
	for range delta {
		c.serial++
		c.instances = append(c.instances, &cloudInstance{id: fmt.Sprintf("%s-%d", group, c.serial), group: group,
			created: w.clock.Now()})
	}
	gpus := 0
	for _, in := range c.instances {
		gpus += c.spec(in.group).GPUs
	}
	w.hist.add(Event{Step: w.currentStep(), At: w.clock.Now(), Instance: by, Kind: EventScaleUp, Group: group,
		Delta: delta, Pending: pending, Upcoming: upcoming, InstancesAfter: len(c.instances),
		MaxNodesTotal: c.opts.MaxNodesTotal, GPUsAfter: gpus, MaxGPUs: c.opts.MaxGPUs})
	return nil
}

// delete terminates instances; their Node objects go and so do the pods
// still bound to them (the pod garbage collector), which the history
// keeps for the invariants.
func (c *Cloud) delete(by, group string, nodes []*v1.Node) error {
	w := c.world
	for _, n := range nodes {
		c.mu.Lock()
		idx := -1
		for i, in := range c.instances {
			if in.group == group && (in.node == n.Name || "dst://"+in.id == n.Spec.ProviderID || "dst://"+in.id == n.Name) {
				idx = i
				break
			}
		}
		if idx < 0 {
			c.mu.Unlock()
			return fmt.Errorf("group %s has no instance for node %s: %w", group, n.Name, cloudprovider.ErrNotFound)
		}
		in := c.instances[idx]
		c.instances = append(c.instances[:idx], c.instances[idx+1:]...)
		c.groups[group].target--
		c.mu.Unlock()
		if in.node == "" {
			continue
		}
		var facts []PodFact
		for _, p := range w.podsOn(in.node) {
			f := factOf(p)
			// A pod past its grace period has had it: the kubelet model
			// ends such pods only at the next tick, later than a real
			// kubelet, and the drain takes one past its grace and the
			// long-terminating margin for gone, as upstream's does.
			if !f.Terminal && !isDaemonPod(p) && !graceOver(p, w.clock.Now()) {
				facts = append(facts, f)
			}
			_ = w.store.Tracker().Delete(podsResource, p.Namespace, p.Name)
		}
		_ = w.store.Tracker().Delete(nodesResource, "", in.node)
		w.hist.add(Event{Step: w.currentStep(), At: w.clock.Now(), Instance: by, Kind: EventNodeDeleted, Object: in.node,
			Group: group, Pods: facts})
	}
	return nil
}

// decrease lowers a target for instances that never registered, newest
// first; it never takes a registered one.
func (c *Cloud) decrease(group string, delta int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[group]
	if !ok {
		return fmt.Errorf("group %s: %w", group, cloudprovider.ErrNotFound)
	}
	for i := len(c.instances) - 1; i >= 0 && delta > 0; i-- {
		if in := c.instances[i]; in.group == group && in.node == "" {
			c.instances = append(c.instances[:i], c.instances[i+1:]...)
			g.target--
			delta--
		}
	}
	if delta > 0 {
		return fmt.Errorf("group %s: %d more than its unregistered instances", group, delta)
	}
	return nil
}

// fitsGroup reports whether a pod fits an empty node of group g: GPU pods
// need GPU nodes; every node has room for one pod.
func fitsGroup(p *v1.Pod, g GroupSpec) bool {
	gpu := p.Spec.Containers[0].Resources.Requests.Name("nvidia.com/gpu", "0")
	return gpu.IsZero() || g.GPUs > 0
}

// graceOver reports whether p is terminating and its grace period has
// ended at now.
func graceOver(p *v1.Pod, now time.Time) bool {
	return p.DeletionTimestamp != nil && !now.Before(p.DeletionTimestamp.Add(time.Duration(podGrace(p))*time.Second))
}

func isDaemonPod(p *v1.Pod) bool {
	ref := p.OwnerReferences
	return len(ref) > 0 && ref[0].Kind == "DaemonSet"
}
