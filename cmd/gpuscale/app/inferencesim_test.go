package app

import (
	"path/filepath"
	"strings"
	"testing"
)

// Bad inference-sim flags are refused, named, before the cluster is
// contacted: here the kubeconfig does not even exist.
func TestInferenceSimRefusesBadFlagsFirst(t *testing.T) {
	missing := "--kubeconfig=" + filepath.Join(t.TempDir(), "no-kubeconfig")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--slots-per-pod=0"}, `--slots-per-pod: must be at least 1, got 0`},
		{[]string{"--prefill-duration=0s"}, `--prefill-duration: must be positive, got 0s`},
		{[]string{"--request-duration=-1s"}, `--request-duration: must be positive, got -1s`},
		{[]string{"--model-label=not a label"}, `--model-label: not a label key`},
		{[]string{"--control-address=9403"}, `--control-address: want [host]:port, got "9403"`},
		{[]string{"--listen-address=localhost"}, `--listen-address: want [host]:port, got "localhost"`},
	} {
		_, err := execute(t, append([]string{"inference-sim", missing}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "kubeconfig") {
			t.Errorf("%v: err %v, want %q before any kubeconfig problem", tc.args, err, tc.want)
		}
	}
	out, err := execute(t, "inference-sim", "--help")
	if err != nil || !strings.Contains(out, `(default "127.0.0.1:9403")`) {
		t.Errorf("inference-sim --help does not show the control endpoint on loopback (%v):\n%s", err, out)
	}
}
