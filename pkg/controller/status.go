package controller

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/clusterstate"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// StatusKey is the ConfigMap key holding the status, as upstream writes it.
const StatusKey = "status"

// retryInterval is the pause between eviction attempts and pod checks.
const retryInterval = 2 * time.Second

// Status is the content of the cluster-autoscaler-status ConfigMap: the
// upstream layout (cluster-wide health, scale-up and scale-down activity,
// then the same per node group), plus why pods stay pending and why nodes
// are kept, which `gpuscale explain` reads.
type Status struct {
	Time             string            `json:"time"`
	AutoscalerStatus string            `json:"autoscalerStatus"`
	Message          string            `json:"message,omitempty"`
	ClusterWide      ClusterWideStatus `json:"clusterWide"`
	NodeGroups       []NodeGroupStatus `json:"nodeGroups"`
	PendingPods      []PendingStatus   `json:"pendingPods,omitempty"`
	KeptNodes        []KeptStatus      `json:"keptNodes,omitempty"`
}

// ClusterWideStatus sums the cluster.
type ClusterWideStatus struct {
	Health    HealthStatus    `json:"health"`
	ScaleUp   ActivityStatus  `json:"scaleUp"`
	ScaleDown ScaleDownStatus `json:"scaleDown"`
}

// HealthStatus counts nodes.
type HealthStatus struct {
	Status     string     `json:"status"`
	NodeCounts NodeCounts `json:"nodeCounts"`
}

// NodeCounts are node tallies.
type NodeCounts struct {
	Registered       RegisteredCounts `json:"registered"`
	Unregistered     int              `json:"unregistered"`
	GPUsNotAdvertise int              `json:"gpusNotAdvertised,omitempty"`
}

// RegisteredCounts split registered nodes.
type RegisteredCounts struct {
	Total   int `json:"total"`
	Ready   int `json:"ready"`
	Unready int `json:"unready"`
}

// ActivityStatus is a scale-up state.
type ActivityStatus struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// ScaleDownStatus is the scale-down state.
type ScaleDownStatus struct {
	Status     string `json:"status"`
	Candidates int    `json:"candidates"`
	Message    string `json:"message,omitempty"`
}

// NodeGroupStatus is one group's line.
type NodeGroupStatus struct {
	Name                string          `json:"name"`
	Health              HealthStatus    `json:"health"`
	CloudProviderTarget int             `json:"cloudProviderTarget"`
	MinSize             int             `json:"minSize"`
	MaxSize             int             `json:"maxSize"`
	ScaleUp             ActivityStatus  `json:"scaleUp"`
	ScaleDown           ScaleDownStatus `json:"scaleDown"`
}

// PendingStatus says why some pods did not trigger a scale-up.
type PendingStatus struct {
	Pods   []string `json:"pods"`
	Reason string   `json:"reason"`
}

// KeptStatus says why a node is not removed.
type KeptStatus struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// buildStatus turns one loop into the status document.
func buildStatus(now time.Time, v *view, plan autoscaler.Plan, st *clusterstate.State) Status {
	s := Status{Time: now.UTC().Format(time.RFC3339), AutoscalerStatus: "Running"}
	overdue := map[string]bool{}
	for _, n := range plan.ScaleUp.GPUOverdue {
		overdue[n] = true
	}
	cw := &s.ClusterWide
	cw.Health = health(v.snap.Nodes(), len(plan.ScaleUp.GPUOverdue))
	cw.ScaleUp = ActivityStatus{Status: "NoActivity"}
	if len(plan.ScaleUp.ScaleUps) > 0 {
		cw.ScaleUp = ActivityStatus{Status: "InProgress", Message: fmt.Sprintf("%d group(s) scaling up", len(plan.ScaleUp.ScaleUps))}
	}
	cw.ScaleDown = scaleDownStatus(plan)
	unneededBy := map[string]int{}
	for _, u := range plan.ScaleDown.Unneeded {
		unneededBy[u.Group]++
	}
	for _, g := range v.snap.NodeGroups() {
		ng := NodeGroupStatus{Name: g.ID, CloudProviderTarget: g.TargetSize, MinSize: g.MinSize, MaxSize: g.MaxSize}
		nodes := v.snap.NodesInGroup(g.ID)
		ng.Health = health(nodes, 0)
		ng.Health.NodeCounts.Unregistered = max(g.TargetSize-len(nodes), 0)
		cw.Health.NodeCounts.Unregistered += ng.Health.NodeCounts.Unregistered
		ng.ScaleUp = ActivityStatus{Status: "NoActivity"}
		for _, su := range plan.ScaleUp.ScaleUps {
			if su.Group == g.ID {
				ng.ScaleUp = ActivityStatus{Status: "InProgress", Message: fmt.Sprintf("%d -> %d: %s", g.TargetSize, su.NewTarget, su.Why)}
			}
		}
		if off, until, why := st.BackedOff(g.ID, now); off {
			ng.ScaleUp = ActivityStatus{Status: "Backoff", Message: fmt.Sprintf("until %s: %s", until.UTC().Format(time.RFC3339), why)}
		}
		ng.ScaleDown = ScaleDownStatus{Status: "NoCandidates", Candidates: unneededBy[g.ID]}
		if unneededBy[g.ID] > 0 {
			ng.ScaleDown.Status = "CandidatesPresent"
		}
		s.NodeGroups = append(s.NodeGroups, ng)
	}
	for _, p := range plan.ScaleUp.Pending {
		ps := PendingStatus{Reason: p.Message()}
		for _, pod := range p.Pods {
			ps.Pods = append(ps.Pods, pod.Namespace+"/"+pod.Name)
		}
		s.PendingPods = append(s.PendingPods, ps)
	}
	for _, k := range plan.ScaleDown.Kept {
		s.KeptNodes = append(s.KeptNodes, KeptStatus{Node: k.Node, Reason: k.Message})
	}
	return s
}

func scaleDownStatus(plan autoscaler.Plan) ScaleDownStatus {
	if plan.ScaleDownSkipped != "" {
		return ScaleDownStatus{Status: "NoCandidates", Message: "skipped: " + plan.ScaleDownSkipped}
	}
	n := len(plan.ScaleDown.Unneeded) + len(plan.ScaleDown.Delete)
	if n == 0 {
		return ScaleDownStatus{Status: "NoCandidates"}
	}
	return ScaleDownStatus{Status: "CandidatesPresent", Candidates: n}
}

func health(nodes []*snapshot.NodeInfo, gpuOverdue int) HealthStatus {
	h := HealthStatus{Status: "Healthy"}
	for _, ni := range nodes {
		h.NodeCounts.Registered.Total++
		if clusterstate.IsReady(ni.Node) {
			h.NodeCounts.Registered.Ready++
		} else {
			h.NodeCounts.Registered.Unready++
		}
	}
	h.NodeCounts.GPUsNotAdvertise = gpuOverdue
	if h.NodeCounts.Registered.Total > 0 && h.NodeCounts.Registered.Unready*2 > h.NodeCounts.Registered.Total {
		h.Status = "Unhealthy"
	}
	return h
}

// writeStatus creates or updates the status ConfigMap.
func writeStatus(ctx context.Context, c kubernetes.Interface, namespace, name string, s Status) error {
	text, err := yaml.Marshal(s)
	if err != nil {
		return err
	}
	cms := c.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
		cm.Data = map[string]string{StatusKey: string(text)}
		cm.Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/last-updated": s.Time}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Data[StatusKey] = string(text)
	cm.Annotations["cluster-autoscaler.kubernetes.io/last-updated"] = s.Time
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
