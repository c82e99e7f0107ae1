package drain_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// podOf builds a pod controlled by a ReplicaSet, the common case, then
// applies edits.
func podOf(name string, edits ...func(*v1.Pod)) *v1.Pod {
	p := builder.Pod(name).CPU("100m").Label("app", "web").Build()
	controlledBy("ReplicaSet", "web-1")(p)
	for _, e := range edits {
		e(p)
	}
	return p
}

func controlledBy(kind, name string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID("u-" + name), Controller: &yes}}
	}
}

type podT = v1.Pod

func ownedNotControlled(p *v1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u-rs"}}
}

func annotated(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func inNamespace(ns string) func(*v1.Pod) { return func(p *v1.Pod) { p.Namespace = ns } }

func withVolume(vol v1.Volume) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, vol) }
}

func emptyDir(name string, medium v1.StorageMedium) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: medium}}}
}

func hostPath(name string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/data"}}}
}

func pdb(ns, name string, allowed int32, matchLabels map[string]string) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	p := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
	if matchLabels != nil {
		p.Spec.Selector = &metav1.LabelSelector{MatchLabels: matchLabels}
	}
	return p
}

func ctx(pdbs ...*policyv1.PodDisruptionBudget) *drain.Context {
	return &drain.Context{Now: now, Node: builder.Node("n1").Build(), Budgets: drain.NewBudgets(pdbs)}
}

// ruleCase is one behaviour of one rule.
type ruleCase struct {
	name string
	pod  *v1.Pod
	ctx  *drain.Context
	want drain.Outcome
	code drain.Code
	// inMessage must appear in the message of a Block verdict.
	inMessage []string
}

func runRuleCases(t *testing.T, r drain.Rule, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.ctx
			if c == nil {
				c = ctx()
			}
			got := r.Check(c, tc.pod)
			if got.Outcome != tc.want || got.Code != tc.code {
				t.Fatalf("%s: got %s/%s (%q), want %s/%s", r.Name(), got.Outcome, got.Code, got.Message, tc.want, tc.code)
			}
			if got.Outcome == drain.Block && !strings.Contains(got.Message, tc.pod.Namespace+"/"+tc.pod.Name) {
				t.Errorf("block message %q does not name the pod", got.Message)
			}
			if got.Outcome != drain.Block && got.Message != "" {
				t.Errorf("only Block verdicts carry a message, got %q", got.Message)
			}
			for _, s := range tc.inMessage {
				if !strings.Contains(got.Message, s) {
					t.Errorf("message %q lacks %q", got.Message, s)
				}
			}
		})
	}
}
