package app

import (
	"bytes"
	"strings"
	"testing"
)

// Wrong forms and flags are refused before any connection, with what was
// typed named; no kubeconfig is read for them.
func TestExplainRefusesBeforeConnecting(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"explain", "default/web"}, `"default/web": "default" is not a pod, node, hpa, nodegroup or cluster; for a pod in namespace default write: explain pod/web -n default`},
		{[]string{"explain", "pod", "web", "-o", "xml"}, `-o/--output: "xml" is not a format; want text, json or yaml`},
		{[]string{"explain", "node", "n1", "--namespace", "kube-system"}, "--autoscaler-namespace"},
		{[]string{"explain", "pod", "web", "-n", ""}, "-n/--namespace: must not be empty"},
		{[]string{"explain"}, "requires at least 1 arg"},
		{[]string{"explain", "cluster", "--timeout=-1s"}, "--timeout: must be positive, got -1s"},
		{[]string{"explain", "cluster", "--timeout=0s"}, "--timeout: must be positive, got 0s"},
	}
	for _, tc := range cases {
		cmd := NewRootCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append(tc.args, "--kubeconfig", "/nonexistent/kubeconfig"))
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}
