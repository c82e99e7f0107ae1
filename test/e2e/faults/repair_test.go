package faults_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/disruption"
	"github.com/gpuscale/gpuscale/pkg/repair"
)

// Fault: two of a node's eight GPUs vanish from allocatable (the device
// plugin withdrew failed devices; capacity still says eight). With node
// repair on, the node is kept for --repair-missing-gpus-after, then
// tainted, drained and deleted, one node at a time as the disruption
// budget allows; its pod goes pending and scale-up brings a healthy node.
// The removal's event names the node and why.
func TestNodeWhoseGPUsVanishIsRepaired(t *testing.T) {
	s := newScope(t, "repair")
	cfg, err := kwok.ParseConfig([]byte(fmt.Sprintf(`provisioningDelay: 1s
nodeGroups:
- name: %s
  minSize: 0
  maxSize: 4
  template:
    labels: {%s: %s}
    capacity: {cpu: "4", memory: 16Gi, pods: "110", nvidia.com/gpu: "8"}
`, s.group("gpu"), LabelScope, s.ns)))
	if err != nil {
		t.Fatal(err)
	}
	const after = 8 * time.Second
	budget, err := disruption.ParseBudget("nodes=1")
	if err != nil {
		t.Fatal(err)
	}
	o := s.options("a")
	o.Autoscaler.Repair.Enabled = true
	o.Autoscaler.Repair.MissingGPUsAfter = after
	o.Autoscaler.Repair.MaxPercentage = 50
	o.Autoscaler.Disruption.Budgets = []disruption.Budget{budget}
	s.start(o, startOptions{Config: cfg})
	s.deploy(workload{name: "train", replicas: 2, cpu: "3"}) // one pod per node
	eventually(t, 60*time.Second, "both pods to run on two GPU nodes", func() bool {
		return s.running("train") == 2 && len(s.nodes("gpu")) == 2
	})
	broken := s.nodes("gpu")[0].Name
	tainted := peak(func() int { return s.taintedCount() })
	brokeAt := time.Now()
	s.loseGPUs(broken, 6)

	var taintedAt time.Time
	sawHeld := false
	eventually(t, 60*time.Second, "the broken node to be tainted for removal", func() bool {
		if d := s.status(o.StatusConfigMapName); d != nil && d.Repair != nil {
			for _, n := range d.Repair.Nodes {
				sawHeld = sawHeld || (n.Name == broken && n.Held == repair.HeldTolerating)
			}
		}
		if s.hasTaint(broken, disruption.TaintToBeDeleted) || s.fate(broken) == "removed" {
			taintedAt = time.Now()
			return true
		}
		return false
	})
	if waited := taintedAt.Sub(brokeAt); waited < after {
		t.Errorf("the node was taken %s after its GPUs vanished, before --repair-missing-gpus-after %s", waited.Round(time.Millisecond), after)
	}
	if !sawHeld {
		t.Errorf("the status never showed %s held %s while its toleration ran", broken, repair.HeldTolerating)
	}
	eventually(t, 90*time.Second, "the broken node to be gone and both pods to run again", func() bool {
		return s.fate(broken) == "removed" && s.running("train") == 2
	})
	t.Logf("tainted %s after the GPUs vanished (toleration %s); gone and both pods running again %s after",
		taintedAt.Sub(brokeAt).Round(100*time.Millisecond), after, time.Since(brokeAt).Round(100*time.Millisecond))
	if most := tainted(); most > 1 {
		t.Errorf("%d nodes were being removed at once, over the budget of 1", most)
	}
	for _, n := range s.nodes("gpu") {
		if q := n.Status.Allocatable["nvidia.com/gpu"]; q.Value() != 8 {
			t.Errorf("node %s has %s GPUs allocatable, want a healthy replacement with 8", n.Name, q.String())
		}
	}
	ev, err := s.c.Client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + broken + ",reason=ScaleDown"})
	if err != nil {
		t.Fatal(err)
	}
	named := false
	for _, e := range ev.Items {
		named = named || (strings.Contains(e.Message, "repair:") && strings.Contains(e.Message, "nvidia.com/gpu allocatable 6 of capacity 8"))
	}
	if !named {
		t.Errorf("no ScaleDown event on %s says it is repaired and why: %v", broken, ev.Items)
	}
}

// loseGPUs takes n of a node's GPUs out of allocatable, capacity unchanged,
// as a device plugin does with devices that failed their health checks.
func (s *scope) loseGPUs(node string, left int64) {
	s.t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := s.c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Allocatable[v1.ResourceName("nvidia.com/gpu")] = *resource.NewQuantity(left, resource.DecimalSI)
		_, err = s.c.Client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		s.t.Fatal(err)
	}
}

// taintedCount counts the scope's nodes carrying ToBeDeletedByClusterAutoscaler.
func (s *scope) taintedCount() int {
	l, err := s.c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: LabelScope + "=" + s.ns})
	if err != nil {
		return 0
	}
	n := 0
	for _, node := range l.Items {
		for _, tt := range node.Spec.Taints {
			if tt.Key == disruption.TaintToBeDeleted {
				n++
			}
		}
	}
	return n
}
