package schedulerparity

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	kubefeatures "k8s.io/kubernetes/pkg/features"

	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// TestParityWithKubeScheduler generates random clusters and pending pods and
// requires pkg/predicates to agree with the real kube-scheduler filter
// plugins on every node. PARITY_CASES sets the number of cases (20,000 by
// default), PARITY_SEED the first seed.
func TestParityWithKubeScheduler(t *testing.T) {
	byPredicate, cases := runParity(t, Options{}, 1)
	// Every predicate must have decided some cases, or the generator has
	// stopped exercising it and agreement proves nothing.
	for p := predicates.NodeUnschedulable; p <= predicates.DynamicResources; p++ {
		if p == predicates.NodeName {
			continue // pending pods do not name a node
		}
		if byPredicate[p] == 0 && cases >= 2000 {
			t.Errorf("no infeasible verdict came from %v over %d cases", p, cases)
		}
	}
}

// TestParityPartitionableDevices runs a quarter of the cases with the
// DRAPartitionableDevices feature gate on (alpha, off by default up to 1.37)
// on both sides: GPUs published with partitions that draw on shared
// counters.
func TestParityPartitionableDevices(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, kubefeatures.DRAPartitionableDevices, true)
	byPredicate, cases := runParity(t, Options{PartitionableDevices: true}, 4)
	if byPredicate[predicates.DynamicResources] == 0 && cases >= 500 {
		t.Error("no infeasible verdict came from DynamicResources")
	}
}

// runParity compares verdicts over PARITY_CASES/share cases and returns
// the infeasible verdicts by gpuscale predicate.
func runParity(t *testing.T, o Options, share int) (map[predicates.Predicate]int, int) {
	cases := envInt(t, "PARITY_CASES", 20000) / share
	seed := int64(envInt(t, "PARITY_SEED", 1))
	if testing.Short() {
		cases = 500 / share
	}
	var disagreements []string
	byPredicate := map[predicates.Predicate]int{}
	feasible, infeasible, draCases, volumeCases, aborted := 0, 0, 0, 0, 0
	for i := 0; i < cases; i++ {
		caseSeed := seed + int64(i)
		c, pod := GenerateWith(rand.New(rand.NewSource(caseSeed)), o)
		if len(pod.Spec.ResourceClaims) > 0 {
			draCases++
		}
		if len(pod.Spec.Volumes) > 0 {
			volumeCases++
		}
		want, reasons, err := oracleVerdicts(c, pod)
		var cycle *CycleError
		if errors.As(err, &cycle) {
			// The scheduler aborts the cycle and binds the pod nowhere;
			// gpuscale must find the same problem on that node.
			aborted++
			got, err := ourVerdicts(c, pod, o)
			if err != nil {
				t.Fatalf("seed %d: gpuscale refused a valid case: %v", caseSeed, err)
			}
			if r := got[cycle.Node]; cycle.Node == "" || r.Reason != predicates.ReasonInvalidClaim {
				disagreements = append(disagreements, fmt.Sprintf("seed %d: kube-scheduler aborted the cycle (%v); gpuscale on node %q: %s",
					caseSeed, cycle, cycle.Node, r))
			}
			continue
		}
		if err != nil {
			t.Fatalf("seed %d: oracle: %v", caseSeed, err)
		}
		got, err := ourVerdicts(c, pod, o)
		if err != nil {
			t.Fatalf("seed %d: gpuscale refused a valid case: %v", caseSeed, err)
		}
		for _, name := range sortedKeys(want) {
			if want[name] {
				feasible++
			} else {
				infeasible++
				byPredicate[got[name].Predicate]++
			}
			if want[name] != got[name].Fits() {
				disagreements = append(disagreements, fmt.Sprintf("seed %d node %s: kube-scheduler feasible=%v %v; gpuscale: %s",
					caseSeed, name, want[name], reasons[name], got[name]))
			}
		}
		if len(disagreements) >= 20 {
			break
		}
	}
	t.Logf("%d cases (%d with resource claims, %d with volumes, %d aborted by a plugin error): %d feasible and %d infeasible node verdicts; infeasible by gpuscale predicate: %v",
		cases, draCases, volumeCases, aborted, feasible, infeasible, byPredicate)
	if len(disagreements) > 0 {
		t.Fatalf("%d disagreements (first ones):\n%s", len(disagreements), strings.Join(disagreements, "\n"))
	}
	return byPredicate, cases
}

func oracleVerdicts(c *Cluster, pod *v1.Pod) (map[string]bool, map[string][]string, error) {
	o, err := NewOracle(c)
	if err != nil {
		return nil, nil, err
	}
	return o.Feasible(pod)
}

func ourVerdicts(c *Cluster, pod *v1.Pod, o Options) (map[string]predicates.Result, error) {
	s := snapshot.New()
	f := snapshot.DefaultDRAFeatures()
	f.PartitionableDevices = o.PartitionableDevices
	s.SetDRAFeatures(f)
	for _, dc := range c.DeviceClasses {
		if err := s.SetDeviceClass(dc); err != nil {
			return nil, err
		}
	}
	for _, sl := range c.ResourceSlices {
		if err := s.SetResourceSlice(sl); err != nil {
			return nil, err
		}
	}
	for _, t := range c.ResourceClaimTemplates {
		if err := s.SetResourceClaimTemplate(t); err != nil {
			return nil, err
		}
	}
	for _, rc := range c.ResourceClaims {
		if err := s.SetResourceClaim(rc); err != nil {
			return nil, err
		}
	}
	for _, ns := range c.Namespaces {
		if err := s.SetNamespace(ns); err != nil {
			return nil, err
		}
	}
	for _, pv := range c.PersistentVolumes {
		if err := s.SetPersistentVolume(pv); err != nil {
			return nil, err
		}
	}
	for _, pvc := range c.PersistentVolumeClaims {
		if err := s.SetPersistentVolumeClaim(pvc); err != nil {
			return nil, err
		}
	}
	for _, sc := range c.StorageClasses {
		if err := s.SetStorageClass(sc); err != nil {
			return nil, err
		}
	}
	for _, cn := range c.CSINodes {
		if err := s.SetCSINode(cn); err != nil {
			return nil, err
		}
	}
	for _, n := range c.Nodes {
		if err := s.AddNode(n); err != nil {
			return nil, err
		}
	}
	for _, p := range c.Pods {
		if err := s.AddPod(p); err != nil {
			return nil, err
		}
	}
	pc, err := predicates.New(s).Prepare(pod)
	if err != nil {
		return nil, err
	}
	out := make(map[string]predicates.Result, len(c.Nodes))
	for _, ni := range s.Nodes() {
		out[ni.Name()] = pc.Check(ni)
	}
	return out, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s: want a positive integer, got %q", name, v)
	}
	return n
}
