package explain

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseTargets(t *testing.T) {
	ctxNS := Namespace{Value: "ml"}               // the kubeconfig context's namespace
	flagNS := Namespace{Value: "team", Set: true} // -n team
	cases := []struct {
		name string
		args []string
		ns   Namespace
		want []Target
	}{
		{"TYPE/NAME in the context's namespace", []string{"pod/web-0"}, ctxNS, []Target{{Kind: KindPod, Namespace: "ml", Name: "web-0"}}},
		{"TYPE NAME with -n", []string{"pod", "web-0"}, flagNS, []Target{{Kind: KindPod, Namespace: "team", Name: "web-0", NamespaceFromFlag: true}}},
		{"plural and several names", []string{"pods", "a", "b"}, ctxNS, []Target{{Kind: KindPod, Namespace: "ml", Name: "a"}, {Kind: KindPod, Namespace: "ml", Name: "b"}}},
		{"short name", []string{"po", "a"}, ctxNS, []Target{{Kind: KindPod, Namespace: "ml", Name: "a"}}},
		{"kinds mixed in TYPE/NAME form", []string{"pod/a", "node/n1", "hpa/h"}, ctxNS,
			[]Target{{Kind: KindPod, Namespace: "ml", Name: "a"}, {Kind: KindNode, Name: "n1"}, {Kind: KindHPA, Namespace: "ml", Name: "h"}}},
		{"node", []string{"node", "gpu-7"}, ctxNS, []Target{{Kind: KindNode, Name: "gpu-7"}}},
		{"no/NAME", []string{"no/gpu-7"}, ctxNS, []Target{{Kind: KindNode, Name: "gpu-7"}}},
		{"horizontalpodautoscaler/NAME", []string{"horizontalpodautoscaler/h"}, ctxNS, []Target{{Kind: KindHPA, Namespace: "ml", Name: "h"}}},
		{"hpa full resource name", []string{"horizontalpodautoscalers.autoscaling", "h"}, ctxNS, []Target{{Kind: KindHPA, Namespace: "ml", Name: "h"}}},
		{"nodegroup", []string{"nodegroup", "gpu"}, ctxNS, []Target{{Kind: KindNodeGroup, Name: "gpu"}}},
		{"ng/NAME", []string{"ng/gpu"}, ctxNS, []Target{{Kind: KindNodeGroup, Name: "gpu"}}},
		{"cluster", []string{"cluster"}, ctxNS, []Target{{Kind: KindCluster}}},
		{"the earlier NAMESPACE/NAME", []string{"pod", "default/web"}, ctxNS, []Target{{Kind: KindPod, Namespace: "default", Name: "web"}}},
		{"the earlier form agreeing with -n", []string{"hpa", "team/h"}, flagNS, []Target{{Kind: KindHPA, Namespace: "team", Name: "h", NamespaceFromFlag: true}}},
		{"kinds are case-insensitive", []string{"Pod/web"}, ctxNS, []Target{{Kind: KindPod, Namespace: "ml", Name: "web"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTargets(tc.args, tc.ns)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseTargets(%q) = %+v, want %+v", tc.args, got, tc.want)
			}
		})
	}
}

// Every wrong or ambiguous form is refused with a message that names what
// was typed and says what to write.
func TestParseTargetsRefuses(t *testing.T) {
	ctxNS := Namespace{Value: "ml"}
	cases := []struct {
		name string
		args []string
		ns   Namespace
		want []string
	}{
		{"nothing", nil, ctxNS, []string{"say what to explain"}},
		{"unknown kind", []string{"deployment", "web"}, ctxNS, []string{`"deployment": explain answers about a pod, node, hpa, nodegroup or cluster`}},
		{"kind without a name", []string{"pod"}, ctxNS, []string{"explain pod needs a name"}},
		{"cluster with a name", []string{"cluster", "prod"}, ctxNS, []string{`explain cluster takes no name, got "prod"`}},
		{"cluster in TYPE/NAME form", []string{"cluster/prod"}, ctxNS, []string{`"cluster/prod": the cluster has no name`}},
		{"NAMESPACE/NAME without a kind", []string{"default/web"}, ctxNS,
			[]string{`"default/web": "default" is not a pod, node`, "write: explain pod/web -n default"}},
		{"TYPE/NAMESPACE/NAME", []string{"pod/default/web"}, ctxNS, []string{`"pod/default/web": a name cannot contain "/"`, "explain pod/web -n default"}},
		{"TYPE/ without a name", []string{"pod/"}, ctxNS, []string{`"pod/": the name is missing`}},
		{"a bare name after TYPE/NAME", []string{"pod/a", "b"}, ctxNS, []string{`"b": name every object as TYPE/NAME`}},
		{"ambiguous TYPE/NAME after a kind", []string{"pod", "pod/web"}, ctxNS, []string{`"pod/web" is ambiguous after "pod"`}},
		{"namespace given twice", []string{"pod", "default/web"}, Namespace{Value: "gpuscale", Set: true},
			[]string{`"default/web" names namespace "default" but -n/--namespace says "gpuscale"`, "--autoscaler-namespace"}},
		{"a namespace on a node", []string{"node", "kube-system/n1"}, ctxNS, []string{`"kube-system/n1": nodes have no namespace`}},
		{"-n for a node (its earlier meaning)", []string{"node", "n1"}, Namespace{Value: "kube-system", Set: true},
			[]string{`-n/--namespace "kube-system": nodes have no namespace`, "--autoscaler-namespace"}},
		{"-n for the cluster", []string{"cluster"}, Namespace{Value: "kube-system", Set: true}, []string{"--autoscaler-namespace"}},
		{"-n for a node group in TYPE/NAME form", []string{"ng/gpu"}, Namespace{Value: "x", Set: true}, []string{"node groups have no namespace"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTargets(tc.args, tc.ns)
			if err == nil {
				t.Fatalf("ParseTargets(%q) = %+v, want an error", tc.args, got)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
