package snapshot

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// validatePod refuses what the scheduling checks cannot interpret: negative
// quantities, malformed selectors, unknown operators and effects. The error
// names the field and the value.
func validatePod(pod *v1.Pod) error {
	if pod.Name == "" {
		return fmt.Errorf("metadata.name: must not be empty")
	}
	spec := &pod.Spec
	// Field paths are formatted only for an error: a loop validates every
	// pod of the cluster it meets for the first time.
	for i := range spec.InitContainers {
		if err := validateContainer(&spec.InitContainers[i], "spec.initContainers", i); err != nil {
			return err
		}
	}
	for i := range spec.Containers {
		if err := validateContainer(&spec.Containers[i], "spec.containers", i); err != nil {
			return err
		}
	}
	if err := validateList(spec.Overhead, "spec.overhead"); err != nil {
		return err
	}
	if spec.Resources != nil {
		if err := validateList(spec.Resources.Requests, "spec.resources.requests"); err != nil {
			return err
		}
	}
	for i, t := range spec.Tolerations {
		if err := validateToleration(t); err != nil {
			return fmt.Errorf("spec.tolerations[%d]%w", i, err)
		}
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		path := "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
		if _, err := nodeaffinity.NewNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	for i, c := range spec.TopologySpreadConstraints {
		if err := validateSpread(c); err != nil {
			return fmt.Errorf("spec.topologySpreadConstraints[%d]%w", i, err)
		}
	}
	return nil
}

// validateContainer checks the container at list[i].
func validateContainer(c *v1.Container, list string, i int) error {
	for _, r := range []struct {
		rl   v1.ResourceList
		name string
	}{{c.Resources.Requests, "requests"}, {c.Resources.Limits, "limits"}} {
		if name, q, bad := negative(r.rl); bad {
			return fmt.Errorf("%s[%d].resources.%s[%s]: negative quantity %s", list, i, r.name, name, q.String())
		}
	}
	for j, p := range c.Ports {
		if p.HostPort < 0 || p.HostPort > 65535 {
			return fmt.Errorf("%s[%d].ports[%d].hostPort: %d is outside 0-65535", list, i, j, p.HostPort)
		}
		switch p.Protocol {
		case "", v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
		default:
			return fmt.Errorf("%s[%d].ports[%d].protocol: unknown protocol %q", list, i, j, p.Protocol)
		}
	}
	return nil
}

// negative finds an amount below zero in rl.
func negative(rl v1.ResourceList) (v1.ResourceName, resource.Quantity, bool) {
	for name, q := range rl {
		if q.Sign() < 0 {
			return name, q, true
		}
	}
	return "", resource.Quantity{}, false
}

func validateList(rl v1.ResourceList, path string) error {
	if name, q, bad := negative(rl); bad {
		return fmt.Errorf("%s[%s]: negative quantity %s", path, name, q.String())
	}
	return nil
}

// validateToleration checks a toleration; an error names the field from
// the toleration on (".operator: ..."), for the caller to prefix.
func validateToleration(t v1.Toleration) error {
	switch t.Operator {
	case "", v1.TolerationOpEqual:
	case v1.TolerationOpExists:
		if t.Value != "" {
			return fmt.Errorf(".value: must be empty with operator Exists, got %q", t.Value)
		}
	default:
		return fmt.Errorf(".operator: unknown operator %q", t.Operator)
	}
	if t.Key == "" && t.Operator != v1.TolerationOpExists {
		return fmt.Errorf(".operator: an empty key needs operator Exists, got %q", t.Operator)
	}
	switch t.Effect {
	case "", v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		return fmt.Errorf(".effect: unknown effect %q", t.Effect)
	}
	return nil
}

// validateSpread checks a spread constraint; an error names the field from
// the constraint on, for the caller to prefix.
func validateSpread(c v1.TopologySpreadConstraint) error {
	if c.MaxSkew <= 0 {
		return fmt.Errorf(".maxSkew: must be positive, got %d", c.MaxSkew)
	}
	if c.TopologyKey == "" {
		return fmt.Errorf(".topologyKey: must not be empty")
	}
	switch c.WhenUnsatisfiable {
	case v1.DoNotSchedule, v1.ScheduleAnyway:
	default:
		return fmt.Errorf(".whenUnsatisfiable: unknown action %q", c.WhenUnsatisfiable)
	}
	if c.MinDomains != nil && *c.MinDomains <= 0 {
		return fmt.Errorf(".minDomains: must be positive, got %d", *c.MinDomains)
	}
	for _, p := range []struct {
		name string
		v    *v1.NodeInclusionPolicy
	}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
		if p.v != nil && *p.v != v1.NodeInclusionPolicyHonor && *p.v != v1.NodeInclusionPolicyIgnore {
			return fmt.Errorf(".%s: unknown policy %q", p.name, *p.v)
		}
	}
	if _, err := metav1.LabelSelectorAsSelector(c.LabelSelector); err != nil {
		return fmt.Errorf(".labelSelector: %w", err)
	}
	return nil
}

// validateNode refuses nodes the checks cannot interpret.
func validateNode(node *v1.Node) error {
	if node.Name == "" {
		return fmt.Errorf("metadata.name: must not be empty")
	}
	if err := validateList(node.Status.Allocatable, "status.allocatable"); err != nil {
		return err
	}
	for i, t := range node.Spec.Taints {
		switch t.Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			return fmt.Errorf("spec.taints[%d].effect: unknown effect %q", i, t.Effect)
		}
		if t.Key == "" {
			return fmt.Errorf("spec.taints[%d].key: must not be empty", i)
		}
	}
	return nil
}
