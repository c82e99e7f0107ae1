package snapshot

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
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
	for i := range spec.InitContainers {
		if err := validateContainer(&spec.InitContainers[i], fmt.Sprintf("spec.initContainers[%d]", i)); err != nil {
			return err
		}
	}
	for i := range spec.Containers {
		if err := validateContainer(&spec.Containers[i], fmt.Sprintf("spec.containers[%d]", i)); err != nil {
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
		if err := validateToleration(t, fmt.Sprintf("spec.tolerations[%d]", i)); err != nil {
			return err
		}
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		path := "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
		if _, err := nodeaffinity.NewNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	for i, c := range spec.TopologySpreadConstraints {
		if err := validateSpread(c, fmt.Sprintf("spec.topologySpreadConstraints[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

func validateContainer(c *v1.Container, path string) error {
	if err := validateList(c.Resources.Requests, path+".resources.requests"); err != nil {
		return err
	}
	if err := validateList(c.Resources.Limits, path+".resources.limits"); err != nil {
		return err
	}
	for i, p := range c.Ports {
		if p.HostPort < 0 || p.HostPort > 65535 {
			return fmt.Errorf("%s.ports[%d].hostPort: %d is outside 0-65535", path, i, p.HostPort)
		}
		switch p.Protocol {
		case "", v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
		default:
			return fmt.Errorf("%s.ports[%d].protocol: unknown protocol %q", path, i, p.Protocol)
		}
	}
	return nil
}

func validateList(rl v1.ResourceList, path string) error {
	for name, q := range rl {
		if q.Sign() < 0 {
			return fmt.Errorf("%s[%s]: negative quantity %s", path, name, q.String())
		}
	}
	return nil
}

func validateToleration(t v1.Toleration, path string) error {
	switch t.Operator {
	case "", v1.TolerationOpEqual:
	case v1.TolerationOpExists:
		if t.Value != "" {
			return fmt.Errorf("%s.value: must be empty with operator Exists, got %q", path, t.Value)
		}
	default:
		return fmt.Errorf("%s.operator: unknown operator %q", path, t.Operator)
	}
	if t.Key == "" && t.Operator != v1.TolerationOpExists {
		return fmt.Errorf("%s.operator: an empty key needs operator Exists, got %q", path, t.Operator)
	}
	switch t.Effect {
	case "", v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		return fmt.Errorf("%s.effect: unknown effect %q", path, t.Effect)
	}
	return nil
}

func validateSpread(c v1.TopologySpreadConstraint, path string) error {
	if c.MaxSkew <= 0 {
		return fmt.Errorf("%s.maxSkew: must be positive, got %d", path, c.MaxSkew)
	}
	if c.TopologyKey == "" {
		return fmt.Errorf("%s.topologyKey: must not be empty", path)
	}
	switch c.WhenUnsatisfiable {
	case v1.DoNotSchedule, v1.ScheduleAnyway:
	default:
		return fmt.Errorf("%s.whenUnsatisfiable: unknown action %q", path, c.WhenUnsatisfiable)
	}
	if c.MinDomains != nil && *c.MinDomains <= 0 {
		return fmt.Errorf("%s.minDomains: must be positive, got %d", path, *c.MinDomains)
	}
	for _, p := range []struct {
		name string
		v    *v1.NodeInclusionPolicy
	}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
		if p.v != nil && *p.v != v1.NodeInclusionPolicyHonor && *p.v != v1.NodeInclusionPolicyIgnore {
			return fmt.Errorf("%s.%s: unknown policy %q", path, p.name, *p.v)
		}
	}
	if _, err := metav1.LabelSelectorAsSelector(c.LabelSelector); err != nil {
		return fmt.Errorf("%s.labelSelector: %w", path, err)
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
