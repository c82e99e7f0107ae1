package drain

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Annotations that forbid voluntary disruption of a pod, or of a node and
// everything on it, by consolidation. gpuscale's own is
// AnnotationDoNotDisrupt; Karpenter's is honoured too, so workloads
// annotated for Karpenter keep their protection when a cluster moves over.
// Either counts when set to "true".
const (
	AnnotationDoNotDisrupt          = "gpuscale.dev/do-not-disrupt"
	AnnotationKarpenterDoNotDisrupt = "karpenter.sh/do-not-disrupt"
)

// CodeDoNotDisrupt is the Block code of RuleDoNotDisrupt.
const CodeDoNotDisrupt Code = "DoNotDisruptAnnotation"

// DoNotDisrupt returns the do-not-disrupt annotation set to "true" on obj's
// annotations, or "".
func DoNotDisrupt(annotations map[string]string) string {
	for _, k := range []string{AnnotationDoNotDisrupt, AnnotationKarpenterDoNotDisrupt} {
		if annotations[k] == "true" {
			return k
		}
	}
	return ""
}

// RuleDoNotDisrupt blocks pods annotated do-not-disrupt: their owners asked
// that nothing voluntary (consolidation) interrupt them, typically a
// training run without checkpoints. It is not among the Default rules:
// scale-down keeps the Cluster Autoscaler's rules, and consolidation adds
// this one (Consolidation).
type RuleDoNotDisrupt struct{}

// Name implements Rule.
func (RuleDoNotDisrupt) Name() string { return "DoNotDisrupt" }

// Check implements Rule.
func (RuleDoNotDisrupt) Check(_ *Context, pod *v1.Pod) Verdict {
	if k := DoNotDisrupt(pod.Annotations); k != "" {
		return block(CodeDoNotDisrupt, fmt.Sprintf("pod %s is annotated %s=true", podKey(pod), k))
	}
	return Verdict{}
}

// Consolidation returns the rules consolidation applies: the Default rules
// with RuleDoNotDisrupt just before the PodDisruptionBudget rule, so that a
// pod that goes away with its node anyway (mirror, DaemonSet, terminal) is
// still skipped.
func Consolidation(o Options) Rules {
	rs := Default(o)
	last := rs[len(rs)-1]
	rs[len(rs)-1] = RuleDoNotDisrupt{}
	return append(rs, last)
}
