// Package faults_test injects the faults a real GPU cluster has into
// gpuscale's live controller, on one real local control plane (etcd,
// kube-apiserver, kube-scheduler, kube-controller-manager, kwok) shared by
// the whole suite: each test works in a namespace of its own, with node
// groups whose template nodes carry that namespace as a label its pods
// select, so tests never see each other's pods or nodes, and it deletes
// what it made when it ends. Tests run one after the other.
//
// Each test names the fault it injects and asserts from cluster state:
// nothing lost, no extra node, recovery within a bounded time.
package faults_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/gpuscale/gpuscale/internal/localcluster"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// shared is the suite's control plane; nil when the suite is skipped.
var shared *cluster.Cluster

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("SKIP_E2E") == "1" || testing.Short() {
		return m.Run() // every test skips
	}
	ctx := context.Background()
	bin, built, err := localcluster.CheckTools(ctx, localcluster.ClusterTools()...)
	if err == nil && !built {
		bin, err = localcluster.EnsureTools(ctx, os.Stderr, localcluster.ClusterTools()...)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fault suite: control-plane tools: %v\n", err)
		return 1
	}
	// The kwok controller keeps only annotated nodes Ready: a test can then
	// make a node NotReady, as a kubelet that stopped would.
	lc, err := localcluster.Start(ctx, localcluster.Options{BinDir: bin, Workdir: cluster.Workdir(), Name: "faults",
		KwokControllerArgs: []string{"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=" + kwok.AnnotationKwokNode + "=" + kwok.AnnotationKwokNodeValue}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "fault suite: %v\n", err)
		return 1
	}
	shared = &cluster.Cluster{Cluster: lc}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "fault suite: control-plane logs:\n%s\n", lc.LogTails(30))
	}
	if err := lc.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "fault suite: %v\n", err)
	}
	return code
}
