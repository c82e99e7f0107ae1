package engine

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// LabelNodeGroup names the group of a simulated node.
const LabelNodeGroup = scenario.LabelNodeGroup

// cloud is the modelled cloud provider: its node groups (creations,
// deletions, stockouts), and the interruptions it sends.
type cloud struct {
	groups []*groupState
	byID   map[string]*groupState
	// irng draws interruptions; interrupting are the nodes under notice.
	irng         *rand.Rand
	interrupting map[string]bool
	// ending are the nodes being taken back as their capacity ends.
	ending map[string]bool
}

// group is the node group with the id the core names.
func (c *cloud) group(id string) (*groupState, error) {
	g := c.byID[id]
	if g == nil {
		return nil, fmt.Errorf("node group %q is not in the scenario", id)
	}
	return g, nil
}

func newCloud(seed int64) cloud {
	return cloud{byID: map[string]*groupState{}, irng: newInterruptionSource(seed), interrupting: map[string]bool{}, ending: map[string]bool{}}
}

// groupState is a node group of the modelled cloud.
type groupState struct {
	cfg      scenario.NodeGroup
	template *v1.Node
	gpus     int64
	// target is the group's target size: registered nodes plus creations
	// in flight. It is what is billed.
	target    int
	created   int // names nodes: <group>-<n>
	inFlight  []*creation
	added     int
	removed   int
	peakNodes int
	// nodes counts the group's registered nodes, kept here because
	// counting them in the snapshot at each add made a group of n nodes
	// cost n^2 to start.
	nodes int
	// reserved are the nodes billed whether they run or not (the
	// scenario's reservedNodes, until a capacity block ends); blockOver:
	// the block's instances are being terminated, and none is launched.
	reserved  int
	blockOver bool
	// queue are the group's queued requests (queued.go).
	queue []*queuedRequest
}

// creation is a node asked for and not registered yet.
type creation struct {
	group     *groupState
	requested time.Duration
	canceled  bool
	// failed: the cloud will not create it (a stockout); it never
	// registers and goes first when the target is lowered. why is the
	// cloud's reason.
	failed bool
	why    string
	// queued is the request it was granted for, if any.
	queued *queuedRequest
}

func (e *Engine) initGroups() error {
	for i := range e.sc.NodeGroups {
		cfg := e.sc.NodeGroups[i]
		tmpl := cfg.TemplateNode()
		g := &groupState{cfg: cfg, template: tmpl, gpus: gpu.Allocatable(tmpl), reserved: cfg.ReservedNodes}
		e.cloud.groups = append(e.cloud.groups, g)
		e.cloud.byID[cfg.Name] = g
		if err := e.setTarget(g, 0); err != nil {
			return err
		}
		for j := 0; j < *cfg.InitialSize; j++ {
			if j%1024 == 0 {
				if err := e.stop.startInterrupted(fmt.Sprintf("node group %s (%d of %d nodes added)", cfg.Name, j, *cfg.InitialSize)); err != nil {
					return err
				}
			}
			if err := e.addNode(g, -time.Hour, true); err != nil {
				return err
			}
		}
		if err := e.setTarget(g, *cfg.InitialSize); err != nil {
			return err
		}
	}
	return nil
}

// setTarget changes a group's target size in the snapshot the core reads.
func (e *Engine) setTarget(g *groupState, target int) error {
	g.target = target
	g.peakNodes = max(g.peakNodes, g.nodes)
	return e.snap.SetNodeGroup(snapshot.NodeGroup{
		ID: g.cfg.Name, MinSize: g.cfg.MinSize, MaxSize: g.cfg.MaxSize, TargetSize: target,
		Template: g.template, InstanceType: g.cfg.InstanceType, PricePerHour: g.cfg.PricePerHour, Spot: g.cfg.Spot,
		Options: g.options(), Queued: g.queuedList(),
	})
}

// requestNodes grows a group: the nodes register after the provisioning
// delay, or, in a stockout window, are reported failed after the creation
// failure delay.
func (e *Engine) requestNodes(g *groupState, delta int) error {
	out := g.stockedOut(e.now)
	for i := 0; i < delta; i++ {
		c := &creation{group: g, requested: e.now}
		g.inFlight = append(g.inFlight, c)
		if out {
			c.why = "the scenario's stockout window"
			if g.blockOver {
				c.why = fmt.Sprintf("the capacity block of group %s is ending", g.cfg.Name)
			}
			e.events.push(&event{at: e.now + e.sc.CreationFailureDelay.Duration, kind: evCreationFailed, creation: c})
			continue
		}
		e.events.push(&event{at: e.now + e.sc.ProvisioningDelay.Duration, kind: evRegister, creation: c})
	}
	g.added += delta
	return e.setTarget(g, g.target+delta)
}

// stockedOut: the group's cloud has no capacity at now.
func (g *groupState) stockedOut(now time.Duration) bool {
	if g.blockOver {
		return true
	}
	for _, w := range g.cfg.Stockouts {
		if now >= w.From.Duration && now < w.To.Duration {
			return true
		}
	}
	return false
}

// cancelNodes drops creations still in flight, the failed ones first, then
// the newest (the target lowered for nodes that never came).
func (e *Engine) cancelNodes(g *groupState, delta int) error {
	n := 0
	for _, failedFirst := range []bool{true, false} {
		for i := len(g.inFlight) - 1; i >= 0 && n < delta; i-- {
			if c := g.inFlight[i]; !c.canceled && (c.failed || !failedFirst) {
				c.canceled = true
				n++
			}
		}
	}
	// A failed creation never registers: forget it once canceled.
	kept := g.inFlight[:0]
	for _, c := range g.inFlight {
		if !(c.canceled && c.failed) {
			kept = append(kept, c)
		}
	}
	g.inFlight = kept
	g.added -= n
	return e.setTarget(g, g.target-n)
}

func (e *Engine) register(c *creation) error {
	if c.failed {
		return nil // given up by the cloud: in flight until the target is lowered
	}
	g := c.group
	for i, x := range g.inFlight {
		if x == c {
			g.inFlight = append(g.inFlight[:i], g.inFlight[i+1:]...)
			break
		}
	}
	if c.canceled {
		return nil
	}
	if err := e.addNode(g, e.now, e.sc.DevicePluginDelay.Duration == 0); err != nil {
		return err
	}
	if c.queued != nil {
		c.queued.nodes = append(c.queued.nodes, g.nodeName(g.created))
	}
	return nil
}

// nodeName is the name of the group's n-th node.
func (g *groupState) nodeName(n int) string { return fmt.Sprintf("%s-%d", g.cfg.Name, n) }

// addNode registers a node of g created at created. A GPU node registers
// without its GPUs unless withGPUs; they follow after the device-plugin delay.
func (e *Engine) addNode(g *groupState, created time.Duration, withGPUs bool) error {
	g.created++
	name := g.nodeName(g.created)
	n := g.template.DeepCopy()
	n.Name = name
	n.Labels[v1.LabelHostname] = name
	n.Spec.ProviderID = "sim://" + name
	n.CreationTimestamp = metav1.NewTime(clock(created))
	if g.gpus > 0 && !withGPUs {
		stripGPUs(n)
		e.events.push(&event{at: e.now + e.sc.DevicePluginDelay.Duration, kind: evGPUs, node: name})
	}
	if err := e.snap.AddNodeInGroup(n, g.cfg.Name); err != nil {
		return err
	}
	if err := e.publishCSINode(g, name); err != nil {
		return err
	}
	g.nodes++
	g.peakNodes = max(g.peakNodes, g.nodes)
	e.scheduleInterruption(g, name)
	if err := e.placeDaemonSetPods(n); err != nil {
		return err
	}
	e.sched.roomGrew()
	e.touch()
	return nil
}

// publishCSINode gives a node of g the CSINode its CSI drivers publish,
// with the group's attach limits; a group without limits publishes none.
func (e *Engine) publishCSINode(g *groupState, node string) error {
	if len(g.cfg.VolumeLimits) == 0 {
		return nil
	}
	cn := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node}}
	for _, d := range slices.Sorted(maps.Keys(g.cfg.VolumeLimits)) {
		count := g.cfg.VolumeLimits[d]
		cn.Spec.Drivers = append(cn.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: node,
			Allocatable: &storagev1.VolumeNodeResources{Count: &count}})
	}
	return e.snap.SetCSINode(cn)
}

func stripGPUs(n *v1.Node) {
	for name := range n.Status.Allocatable {
		if gpu.IsGPUResource(name) {
			delete(n.Status.Allocatable, name)
			delete(n.Status.Capacity, name)
		}
	}
}

// advertiseGPUs gives a registered node its GPUs, keeping its pods.
func (e *Engine) advertiseGPUs(name string) error {
	ni := e.snap.Node(name)
	if ni == nil {
		return nil // removed before its device plugin started
	}
	g := e.cloud.byID[ni.Group]
	n := ni.Node.DeepCopy()
	for k, q := range g.template.Status.Allocatable {
		if gpu.IsGPUResource(k) {
			n.Status.Allocatable[k] = q.DeepCopy()
			n.Status.Capacity[k] = q.DeepCopy()
		}
	}
	pods := append([]*snapshot.PodInfo(nil), ni.Pods...)
	if err := e.snap.RemoveNode(name); err != nil {
		return err
	}
	if err := e.snap.AddNodeInGroup(n, ni.Group); err != nil {
		return err
	}
	for _, pi := range pods {
		if err := e.snap.AddPodInfo(pi, name); err != nil {
			return err
		}
	}
	e.sched.roomGrew()
	e.touch()
	return nil
}

// removeNode deletes a node whose pods have been evicted.
func (e *Engine) removeNode(name string) error {
	ni := e.snap.Node(name)
	if ni == nil {
		return fmt.Errorf("node %s: not in the cluster", name)
	}
	g := e.cloud.byID[ni.Group]
	if err := e.snap.RemoveNode(name); err != nil {
		return err
	}
	e.snap.RemoveCSINode(name)
	delete(e.cloud.interrupting, name)
	delete(e.cloud.ending, name)
	g.nodes--
	g.removed++
	e.touch()
	return e.setTarget(g, g.target-1)
}
