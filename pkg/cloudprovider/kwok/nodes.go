package kwok

import (
	"encoding/json"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/dra"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Labels and annotations the provider reads and writes.
const (
	// LabelNodeGroup names the group a node belongs to; it is how the
	// provider finds its nodes after a restart.
	LabelNodeGroup = "gpuscale.dev/node-group"
	// AnnotationKwokNode makes the kwok controller adopt the node and keep
	// it Ready (value AnnotationKwokNodeValue).
	AnnotationKwokNode      = "kwok.x-k8s.io/node"
	AnnotationKwokNodeValue = "fake"
	// AnnotationGPUsAt is when the node's device plugin "starts": from then
	// on Reconcile makes its GPUs allocatable. Kept on the node, so a
	// restarted provider needs no other record of it.
	AnnotationGPUsAt = "gpuscale.dev/kwok-gpus-at"
	// TemplateNamePrefix starts the name of a group's template node.
	TemplateNamePrefix = "template-"
)

// group is a configured node group with what the provider derives from it
// once: the labels of its nodes, its resources split into GPUs and the rest,
// and its template node.
type group struct {
	cfg      NodeGroupConfig
	labels   map[string]string
	nonGPU   v1.ResourceList
	gpus     v1.ResourceList
	template *v1.Node
	// templateSlices are the DRA devices' ResourceSlices for the template
	// node; each node publishes its own copy (dra.ForNode).
	templateSlices []*resourceapi.ResourceSlice
}

func newGroup(cfg NodeGroupConfig) *group {
	g := &group{cfg: cfg, nonGPU: v1.ResourceList{}, gpus: v1.ResourceList{}}
	// kubelet always sets os and arch; DaemonSets commonly select on them.
	// The template may override them.
	g.labels = map[string]string{v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64"}
	for k, v := range cfg.Template.Labels {
		g.labels[k] = v
	}
	g.labels[LabelNodeGroup] = cfg.Name
	if cfg.Zone != "" {
		g.labels[v1.LabelTopologyZone] = cfg.Zone
	}
	if cfg.InstanceType != "" {
		g.labels[v1.LabelInstanceTypeStable] = cfg.InstanceType
	}
	for name, q := range cfg.Template.Capacity {
		if gpu.IsGPUResource(name) {
			g.gpus[name] = q.DeepCopy()
		} else {
			g.nonGPU[name] = q.DeepCopy()
		}
	}
	if _, ok := g.nonGPU[v1.ResourcePods]; !ok {
		// The kubelet's --max-pods default; a node without it takes no pods.
		g.nonGPU[v1.ResourcePods] = *resource.NewQuantity(110, resource.DecimalSI)
	}
	// Templates always carry their GPUs: a group scaled to zero must still
	// look like a GPU group to the scale-up simulation.
	name := TemplateNamePrefix + cfg.Name
	full := g.nonGPU.DeepCopy()
	for k, q := range g.gpus {
		full[k] = q.DeepCopy()
	}
	g.template = g.node(name, full)
	g.template.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	// Validated with the configuration: the devices make valid slices.
	g.templateSlices, _ = dra.TemplateSlices(name, cfg.Template.Devices)
	return g
}

// hasDevices is true for groups whose nodes get something after the
// device-plugin delay: extended GPU resources or DRA slices.
func (g *group) hasDevices() bool { return len(g.gpus) > 0 || len(g.templateSlices) > 0 }

// node is a node of the group named name with the given resources as both
// capacity and allocatable.
func (g *group) node(name string, resources v1.ResourceList) *v1.Node {
	labels := make(map[string]string, len(g.labels)+1)
	for k, v := range g.labels {
		labels[k] = v
	}
	labels[v1.LabelHostname] = name
	taints := make([]v1.Taint, len(g.cfg.Template.Taints))
	copy(taints, g.cfg.Template.Taints)
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{AnnotationKwokNode: AnnotationKwokNodeValue},
		},
		Spec: v1.NodeSpec{ProviderID: "kwok://" + name, Taints: taints},
		Status: v1.NodeStatus{
			Capacity:    resources.DeepCopy(),
			Allocatable: resources.DeepCopy(),
		},
	}
}

// newNode is the Node object created for a pending node at now. It
// registers without its GPUs, as a real node does before its device plugin
// runs; AnnotationGPUsAt says when Reconcile adds them.
func (g *group) newNode(name string, now time.Time, devicePluginDelay time.Duration) *v1.Node {
	n := g.node(name, g.nonGPU)
	if g.hasDevices() {
		n.Annotations[AnnotationGPUsAt] = now.Add(devicePluginDelay).UTC().Format(time.RFC3339Nano)
	}
	return n
}

// snapshotGroup is the group as the core sees it.
func (g *group) snapshotGroup(target int) snapshot.NodeGroup {
	sg := snapshot.NodeGroup{
		ID: g.cfg.Name, MinSize: g.cfg.MinSize, MaxSize: g.cfg.MaxSize, TargetSize: target,
		Template: g.template.DeepCopy(), InstanceType: g.cfg.InstanceType,
		PricePerHour: g.cfg.PricePerHour, Spot: g.cfg.Spot,
	}
	for _, sl := range g.templateSlices {
		sg.TemplateSlices = append(sg.TemplateSlices, sl.DeepCopy())
	}
	return sg
}

// devicesAt is when the node's device plugin and DRA drivers "start", from
// its annotation; false for nodes without one (made by hand, or by an
// older provider), which are left alone.
func devicesAt(node *v1.Node) (time.Time, bool) {
	at, err := time.Parse(time.RFC3339Nano, node.Annotations[AnnotationGPUsAt])
	return at, err == nil
}

// slicesFor are the ResourceSlices the node publishes once its DRA drivers
// run: the template's, made the node's own and owned by the Node object so
// that they go when it goes.
func (g *group) slicesFor(node *v1.Node) []*resourceapi.ResourceSlice {
	out := dra.ForNode(g.templateSlices, g.template.Name, node.Name)
	for _, sl := range out {
		sl.UID = ""
		sl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
	}
	return out
}

// gpusDue reports whether node should now have its GPUs and does not.
// Nodes without the annotation (made by hand, or by an older provider) are
// left alone.
func (g *group) gpusDue(node *v1.Node, now time.Time) bool {
	if len(g.gpus) == 0 || gpu.Allocatable(node) > 0 {
		return false
	}
	at, ok := devicesAt(node)
	return ok && !now.Before(at)
}

// gpuPatch is the strategic-merge patch of the node status that advertises
// the group's GPUs, as the device plugin's registration would.
func (g *group) gpuPatch() []byte {
	type status struct {
		Capacity    v1.ResourceList `json:"capacity"`
		Allocatable v1.ResourceList `json:"allocatable"`
	}
	body := struct {
		Status status `json:"status"`
	}{status{Capacity: g.gpus, Allocatable: g.gpus}}
	data, err := json.Marshal(body)
	if err != nil {
		panic(err) // resource lists always marshal
	}
	return data
}
