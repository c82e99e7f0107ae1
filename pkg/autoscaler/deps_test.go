package autoscaler_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The decision core does no I/O: none of its packages may link client-go
// or a cloud SDK, directly or through another package. A helper that would
// bring one in belongs in a shell.
func TestCoreLinksNoClientOrCloudSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	core := []string{"snapshot", "predicates", "estimator", "expander", "scaleup", "scaledown", "scaledown/drain",
		"clusterstate", "autoscaler", "status", "limits", "gpu", "disruption", "pending"}
	forbidden := []string{"k8s.io/client-go", "github.com/aws/aws-sdk-go-v2", "google.golang.org/api", "cloud.google.com/go"}
	for _, pkg := range core {
		path := "github.com/gpuscale/gpuscale/pkg/" + pkg
		out, err := exec.Command("go", "list", "-deps", path).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", path, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s links %s", path, dep)
					break
				}
			}
		}
	}
}

// The shells and explain speak the loop's vocabulary (pkg/autoscaler's
// actions and outcomes, pkg/disruption's removals and taint keys,
// pkg/status's codes) and import no planner: what a planner decides
// reaches them only through Step's plan and status.
func TestShellsImportNoPlanner(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	shells := []string{"pkg/controller", "pkg/sim/engine", "pkg/explain", "internal/run", "internal/demo", "cmd/gpuscale/app"}
	planners := []string{"scaleup", "scaledown", "consolidation"}
	for _, shell := range shells {
		path := "github.com/gpuscale/gpuscale/" + shell
		out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, path).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", path, err, out)
		}
		for _, imp := range strings.Fields(string(out)) {
			for _, p := range planners {
				if imp == "github.com/gpuscale/gpuscale/pkg/"+p {
					t.Errorf("%s imports the planner %s; take the vocabulary from pkg/disruption, pkg/status or pkg/autoscaler", shell, imp)
				}
			}
		}
	}
}
