// Package drain decides, pod by pod, what removing a node means for the pods
// on it: the pod must be evicted and rescheduled elsewhere (Drain), it can be
// ignored because it goes away with the node or is gone already (Skip), or it
// cannot be moved at all, so the node stays (Block).
//
// Each reason is one Rule in its own file, in the spirit of the Cluster
// Autoscaler's drainability rules: adding a rule touches no other rule. Rules
// run in a fixed order and the first one with an opinion decides; a pod no
// rule has an opinion on is drained. The order is the Cluster Autoscaler's:
// rules that let a pod go (mirror, expendable, long terminating, DaemonSet,
// terminal) and the one that waits for a pod (safe-to-evict
// "on-completion") come before the rules that block (no controller,
// kube-system, safe-to-evict "false", local storage), and the
// PodDisruptionBudget rule comes last, just after do-not-disrupt (the one
// rule upstream lacks: every voluntary disruption honours it, so a pod that
// goes away with its node anyway, a DaemonSet or mirror pod, is still
// skipped, and safe-to-evict "true" cannot override it);
// --min-replica-count's rule blocks before the DaemonSet rule, as
// upstream's does. The safe-to-evict "true" annotation is not a rule of its own:
// the blocking rules it overrides consult it, so that it can never override
// a PodDisruptionBudget (the Eviction API would refuse the eviction anyway).
//
// Rules have no I/O and take the time as an argument.
package drain

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// Outcome is what a rule decides for one pod.
type Outcome uint8

const (
	// Undecided means the rule has nothing to say; the next rule decides.
	Undecided Outcome = iota
	// Drain means the pod must be evicted and must fit on another node.
	Drain
	// Skip means the pod does not need to move: it goes away with the node,
	// is already gone, or may be killed without notice.
	Skip
	// Block means the pod cannot be moved, so its node must stay.
	Block
	// Wait means the pod must not be evicted but will finish by itself: it
	// need not move, and its node may be found unneeded, but is removed
	// only once the pod has completed.
	Wait
)

var outcomeNames = [...]string{"Undecided", "Drain", "Skip", "Block", "Wait"}

func (o Outcome) String() string { return outcomeNames[o] }

// Code is a stable, machine-readable reason for a verdict. Where the Cluster
// Autoscaler has a name for the same reason, the code uses it.
type Code string

// Codes of Skip verdicts.
const (
	CodeMirrorPod       Code = "MirrorPod"
	CodeExpendablePod   Code = "ExpendablePod"
	CodeLongTerminating Code = "LongTerminatingPod"
	CodeDaemonSetPod    Code = "DaemonSetPod"
	CodeTerminalPod     Code = "TerminalPod"
)

// Codes of Block verdicts.
const (
	CodeNotReplicated    Code = "NotReplicated"
	CodeCustomController Code = "CustomControllerPod"
	CodeSystemPod        Code = "UnmovableKubeSystemPod"
	CodeNotSafeToEvict   Code = "NotSafeToEvictAnnotation"
	CodeLocalStorage     Code = "LocalStorageRequested"
	CodeNotEnoughPDB     Code = "NotEnoughPdb"
	CodeInvalidPDB       Code = "InvalidPdb"
	// CodeMinReplicasReached and CodeControllerNotFound come from
	// --min-replica-count.
	CodeMinReplicasReached Code = "MinReplicasReached"
	CodeControllerNotFound Code = "ControllerNotFound"
)

// Codes of Wait verdicts.
const (
	// CodeOnCompletion: safe-to-evict "on-completion".
	CodeOnCompletion Code = "OnCompletionPod"
)

// Verdict is a rule's decision for one pod.
type Verdict struct {
	Outcome Outcome
	// Code says why, for Skip and Block.
	Code Code
	// Message is set on Block: it names the pod and says what to change.
	Message string
}

// Context is what a rule may look at besides the pod.
type Context struct {
	// Now is the decision time; rules never read the clock.
	Now time.Time
	// Node is the node being drained.
	Node *v1.Node
	// Budgets holds the PodDisruptionBudgets and what is left of their
	// allowance in this loop; nil means there are none.
	Budgets *Budgets
	// Replicas are the ReplicaSets' and ReplicationControllers' replica
	// counts, for --min-replica-count.
	Replicas Replicas
}

// Rule judges one pod.
type Rule interface {
	// Name identifies the rule in logs and tests.
	Name() string
	// Check returns the rule's verdict; Undecided when it has no opinion.
	Check(c *Context, pod *v1.Pod) Verdict
}

// Options switch rules on and tune them. The names follow the Cluster
// Autoscaler flags.
type Options struct {
	// SkipNodesWithLocalStorage (--skip-nodes-with-local-storage) blocks
	// pods with emptyDir or hostPath volumes.
	SkipNodesWithLocalStorage bool
	// SkipNodesWithSystemPods (--skip-nodes-with-system-pods) blocks
	// kube-system pods that no PodDisruptionBudget covers.
	SkipNodesWithSystemPods bool
	// SkipNodesWithCustomControllerPods
	// (--skip-nodes-with-custom-controller-pods) blocks pods whose
	// controller is not a ReplicaSet, ReplicationController, Job or
	// StatefulSet.
	SkipNodesWithCustomControllerPods bool
	// ExpendablePodsPriorityCutoff (--expendable-pods-priority-cutoff):
	// pods with a lower priority are skipped.
	ExpendablePodsPriorityCutoff int32
	// BlockingSystemPodDisruptionTimeout
	// (--blocking-system-pod-distruption-timeout): how long after its
	// creation a kube-system pod without a budget blocks its node.
	BlockingSystemPodDisruptionTimeout time.Duration
	// MinReplicaCount (--min-replica-count): pods of ReplicaSets and
	// ReplicationControllers with fewer replicas block their node; 0 off.
	MinReplicaCount int
}

// DefaultOptions are the Cluster Autoscaler defaults.
func DefaultOptions() Options {
	return Options{
		SkipNodesWithLocalStorage:          true,
		SkipNodesWithSystemPods:            true,
		SkipNodesWithCustomControllerPods:  true,
		ExpendablePodsPriorityCutoff:       -10,
		BlockingSystemPodDisruptionTimeout: time.Hour,
	}
}

// Rules is an ordered list of rules.
type Rules []Rule

// Default returns the rules in the Cluster Autoscaler's order; rules that
// options switch off are left out.
func Default(o Options) Rules {
	rs := Rules{
		RuleMirrorPod{},
		RuleExpendablePod{Cutoff: o.ExpendablePodsPriorityCutoff},
		RuleLongTerminating{},
	}
	if o.SkipNodesWithCustomControllerPods && o.MinReplicaCount > 0 {
		rs = append(rs, RuleMinReplicaCount{Min: o.MinReplicaCount})
	}
	rs = append(rs,
		RuleDaemonSetPod{},
		RuleTerminalPod{},
		RuleOnCompletion{},
		RuleNoController{AllowCustomControllers: !o.SkipNodesWithCustomControllerPods},
	)
	if o.SkipNodesWithSystemPods {
		rs = append(rs, RuleSystemPod{DisruptionTimeout: o.BlockingSystemPodDisruptionTimeout})
	}
	rs = append(rs, RuleSafeToEvict{})
	if o.SkipNodesWithLocalStorage {
		rs = append(rs, RuleLocalStorage{})
	}
	return append(rs, RuleDoNotDisrupt{}, RulePodDisruptionBudget{})
}

// Evaluate runs the rules in order and returns the first verdict that is not
// Undecided; a pod no rule decides on is drained.
func (rs Rules) Evaluate(c *Context, pod *v1.Pod) Verdict {
	for _, r := range rs {
		if v := r.Check(c, pod); v.Outcome != Undecided {
			return v
		}
	}
	return Verdict{Outcome: Drain}
}

func skip(code Code) Verdict { return Verdict{Outcome: Skip, Code: code} }

func block(code Code, msg string) Verdict { return Verdict{Outcome: Block, Code: code, Message: msg} }

func podKey(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
