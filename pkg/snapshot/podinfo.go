package snapshot

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodInfo is a pod with what the scheduling checks need computed once:
// its requests, host ports and parsed required (anti-)affinity terms.
type PodInfo struct {
	Pod *v1.Pod
	// Requests is what the pod takes from a node, computed as kube-scheduler
	// does: max of init containers (sidecars included) and the sum of
	// containers, plus overhead; pod-level requests win where set.
	Requests Resource
	// HostPorts are the host ports of regular containers and restartable
	// (sidecar) init containers.
	HostPorts []HostPort
	// RequiredAffinityTerms and RequiredAntiAffinityTerms are the pod's
	// requiredDuringSchedulingIgnoredDuringExecution pod (anti-)affinity terms.
	RequiredAffinityTerms     []AffinityTerm
	RequiredAntiAffinityTerms []AffinityTerm
}

// HostPort is one host port a pod binds, normalised: an empty IP is 0.0.0.0
// and an empty protocol is TCP.
type HostPort struct {
	IP       string
	Protocol string
	Port     int32
}

// AffinityTerm is a parsed PodAffinityTerm.
type AffinityTerm struct {
	// Namespaces lists the namespaces named by the term, or the owning pod's
	// namespace when the term names none and has no namespace selector.
	Namespaces map[string]struct{}
	// NamespaceSelector matches namespaces by their labels; labels.Nothing()
	// when the term has none.
	NamespaceSelector labels.Selector
	Selector          labels.Selector
	TopologyKey       string
}

// Matches reports whether pod falls under the term. nsLabels are the labels
// of pod's namespace.
func (t *AffinityTerm) Matches(pod *v1.Pod, nsLabels labels.Set) bool {
	if _, ok := t.Namespaces[pod.Namespace]; ok || t.NamespaceSelector.Matches(nsLabels) {
		return t.Selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

// PodKey is "namespace/name".
func PodKey(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// NewPodInfo validates pod and computes its scheduling data. An error names
// the pod and the field at fault.
func NewPodInfo(pod *v1.Pod) (*PodInfo, error) {
	if pod == nil {
		return nil, fmt.Errorf("pod is nil")
	}
	if err := validatePod(pod); err != nil {
		return nil, fmt.Errorf("pod %s: %w", PodKey(pod), err)
	}
	pi := &PodInfo{Pod: pod}
	pi.Requests = ResourceFromList(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{
		// Running pods may have been resized in place: the scheduler counts
		// the larger of spec and status.
		UseStatusResources: pod.Spec.NodeName != "",
	}))
	pi.HostPorts = hostPorts(pod)
	var err error
	if pi.RequiredAffinityTerms, err = parseTerms(pod, requiredAffinity(pod), "spec.affinity.podAffinity"); err != nil {
		return nil, fmt.Errorf("pod %s: %w", PodKey(pod), err)
	}
	if pi.RequiredAntiAffinityTerms, err = parseTerms(pod, requiredAntiAffinity(pod), "spec.affinity.podAntiAffinity"); err != nil {
		return nil, fmt.Errorf("pod %s: %w", PodKey(pod), err)
	}
	return pi, nil
}

func requiredAffinity(pod *v1.Pod) []v1.PodAffinityTerm {
	if a := pod.Spec.Affinity; a != nil && a.PodAffinity != nil {
		return a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

func requiredAntiAffinity(pod *v1.Pod) []v1.PodAffinityTerm {
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		return a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

func parseTerms(pod *v1.Pod, terms []v1.PodAffinityTerm, path string) ([]AffinityTerm, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	out := make([]AffinityTerm, 0, len(terms))
	for i := range terms {
		t := &terms[i]
		field := fmt.Sprintf("%s.requiredDuringSchedulingIgnoredDuringExecution[%d]", path, i)
		if t.TopologyKey == "" {
			return nil, fmt.Errorf("%s.topologyKey: must not be empty", field)
		}
		sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("%s.labelSelector: %w", field, err)
		}
		nsSel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
		if err != nil {
			return nil, fmt.Errorf("%s.namespaceSelector: %w", field, err)
		}
		ns := make(map[string]struct{}, len(t.Namespaces)+1)
		if len(t.Namespaces) == 0 && t.NamespaceSelector == nil {
			ns[pod.Namespace] = struct{}{}
		}
		for _, n := range t.Namespaces {
			ns[n] = struct{}{}
		}
		out = append(out, AffinityTerm{Namespaces: ns, NamespaceSelector: nsSel, Selector: sel, TopologyKey: t.TopologyKey})
	}
	return out, nil
}

func hostPorts(pod *v1.Pod) []HostPort {
	var out []HostPort
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := HostPort{IP: p.HostIP, Protocol: string(p.Protocol), Port: p.HostPort}
			if hp.IP == "" {
				hp.IP = bindAllIP
			}
			if hp.Protocol == "" {
				hp.Protocol = string(v1.ProtocolTCP)
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		if IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			add(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// IsRestartableInitContainer reports whether c is a sidecar: an init
// container with restartPolicy Always that runs for the pod's whole life.
func IsRestartableInitContainer(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

const bindAllIP = "0.0.0.0"
