package drain

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerKey names a ReplicaSet or ReplicationController.
type ControllerKey struct {
	Namespace, Kind, Name string
}

// MarshalText writes the key as namespace/Kind/name, so that Replicas is
// a JSON object (in loop records).
func (k ControllerKey) MarshalText() ([]byte, error) {
	return []byte(k.Namespace + "/" + k.Kind + "/" + k.Name), nil
}

// UnmarshalText reads what MarshalText wrote.
func (k *ControllerKey) UnmarshalText(b []byte) error {
	parts := strings.Split(string(b), "/")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return fmt.Errorf("controller key %q: want namespace/Kind/name", b)
	}
	*k = ControllerKey{Namespace: parts[0], Kind: parts[1], Name: parts[2]}
	return nil
}

// Replicas are the spec.replicas of the cluster's ReplicaSets and
// ReplicationControllers, for RuleMinReplicaCount. A nil map means the
// shell does not know them.
type Replicas map[ControllerKey]int32

// RuleMinReplicaCount (--min-replica-count) blocks a pod whose ReplicaSet or
// ReplicationController asks for fewer than Min replicas: evicting one of a
// few replicas takes a large share of the workload away. As upstream, it
// runs only with --skip-nodes-with-custom-controller-pods (the default) and
// comes before the rules that let a pod go, so safe-to-evict "true" does
// not override it; with Min 0 it does nothing. A controller the shell did
// not list blocks the pod too: its replica count cannot be checked.
type RuleMinReplicaCount struct {
	Min int
}

// Name implements Rule.
func (RuleMinReplicaCount) Name() string { return "MinReplicaCount" }

// Check implements Rule.
func (r RuleMinReplicaCount) Check(c *Context, pod *v1.Pod) Verdict {
	if r.Min <= 0 {
		return Verdict{}
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || (ref.Kind != "ReplicaSet" && ref.Kind != "ReplicationController") {
		return Verdict{}
	}
	n, ok := c.Replicas[ControllerKey{Namespace: pod.Namespace, Kind: ref.Kind, Name: ref.Name}]
	if !ok {
		return block(CodeControllerNotFound, fmt.Sprintf(
			"pod %s is controlled by %s %s, which is not known, so its replica count cannot be checked against --min-replica-count=%d",
			podKey(pod), ref.Kind, ref.Name, r.Min))
	}
	if int(n) < r.Min {
		return block(CodeMinReplicasReached, fmt.Sprintf(
			"pod %s belongs to %s %s, which asks for %d replica(s), fewer than --min-replica-count=%d; "+
				"lower the flag or run more replicas to let it move",
			podKey(pod), ref.Kind, ref.Name, n, r.Min))
	}
	return Verdict{}
}
