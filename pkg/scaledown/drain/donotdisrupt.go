package drain

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Annotations that forbid voluntary disruption of a pod, or of a node and
// everything on it, by scale-down and consolidation alike. gpuscale's own
// is AnnotationDoNotDisrupt; Karpenter's is honoured too, so workloads
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
// that nothing voluntary interrupt them (typically a training run without
// checkpoints), neither scale-down nor consolidation. It is among the
// Default rules, just before the PodDisruptionBudget rule.
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
