package schedulerparity

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/predicates"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// TestParityWithKubeScheduler generates random clusters and pending pods and
// requires pkg/predicates to agree with the real kube-scheduler filter
// plugins on every node. PARITY_CASES sets the number of cases (20,000 by
// default), PARITY_SEED the first seed.
func TestParityWithKubeScheduler(t *testing.T) {
	cases := envInt(t, "PARITY_CASES", 20000)
	seed := int64(envInt(t, "PARITY_SEED", 1))
	if testing.Short() {
		cases = 500
	}
	var disagreements []string
	byPredicate := map[predicates.Predicate]int{}
	feasible, infeasible := 0, 0
	for i := 0; i < cases; i++ {
		caseSeed := seed + int64(i)
		c, pod := Generate(rand.New(rand.NewSource(caseSeed)))
		want, reasons, err := oracleVerdicts(c, pod)
		if err != nil {
			t.Fatalf("seed %d: oracle: %v", caseSeed, err)
		}
		got, err := ourVerdicts(c, pod)
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
	t.Logf("%d cases: %d feasible and %d infeasible node verdicts; infeasible by gpuscale predicate: %v",
		cases, feasible, infeasible, byPredicate)
	if len(disagreements) > 0 {
		t.Fatalf("%d disagreements (first ones):\n%s", len(disagreements), strings.Join(disagreements, "\n"))
	}
	// Every predicate must have decided some cases, or the generator has
	// stopped exercising it and agreement proves nothing.
	for p := predicates.NodeUnschedulable; p <= predicates.InterPodAffinity; p++ {
		if p == predicates.NodeName {
			continue // pending pods do not name a node
		}
		if byPredicate[p] == 0 && cases >= 2000 {
			t.Errorf("no infeasible verdict came from %v over %d cases", p, cases)
		}
	}
}

func oracleVerdicts(c *Cluster, pod *v1.Pod) (map[string]bool, map[string][]string, error) {
	o, err := NewOracle(c)
	if err != nil {
		return nil, nil, err
	}
	return o.Feasible(pod)
}

func ourVerdicts(c *Cluster, pod *v1.Pod) (map[string]predicates.Result, error) {
	s := snapshot.New()
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
