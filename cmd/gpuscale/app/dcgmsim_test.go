package app

import (
	"path/filepath"
	"strings"
	"testing"
)

// Bad dcgm-sim flags are refused, named, before the cluster is contacted:
// here the kubeconfig does not even exist.
func TestDCGMSimRefusesBadFlagsFirst(t *testing.T) {
	missing := "--kubeconfig=" + filepath.Join(t.TempDir(), "no-kubeconfig")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--node=GPU_Node_1"}, `--node: not a node name`},
		{[]string{"--node=gpu node"}, `got "gpu node"`},
		{[]string{"--control-address=9401"}, `--control-address: want [host]:port, got "9401"`},
		{[]string{"--listen-address=localhost"}, `--listen-address: want [host]:port, got "localhost"`},
	} {
		_, err := execute(t, append([]string{"dcgm-sim", missing}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "kubeconfig") {
			t.Errorf("%v: err %v, want %q before any kubeconfig problem", tc.args, err, tc.want)
		}
	}
}

func TestDCGMSimControlEndpointIsOnLoopbackByDefault(t *testing.T) {
	out, err := execute(t, "dcgm-sim", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `--control-address string`) || !strings.Contains(out, `(default "127.0.0.1:9401")`) {
		t.Errorf("dcgm-sim --help does not show the control endpoint on loopback:\n%s", out)
	}
}
