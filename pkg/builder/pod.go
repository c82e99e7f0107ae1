// Package builder makes pods, nodes and node groups for tests and examples
// in a style that reads like the spec:
//
//	builder.Pod("trainer").CPU("4").GPU(1).Toleration("nvidia.com/gpu").Build()
//	builder.Node("gpu-1").Zone("us-east-1a").CPU("32").GPU(4).Build()
package builder

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// GPU is the extended resource NVIDIA's device plugin advertises.
const GPU v1.ResourceName = "nvidia.com/gpu"

// PodBuilder builds a pod with one container named "main".
type PodBuilder struct{ pod *v1.Pod }

// Pod starts a pod in namespace "default".
func Pod(name string) *PodBuilder {
	return &PodBuilder{pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main"}}},
	}}
}

// Build returns the pod.
func (b *PodBuilder) Build() *v1.Pod { return b.pod }

// Namespace sets the namespace.
func (b *PodBuilder) Namespace(ns string) *PodBuilder { b.pod.Namespace = ns; return b }

// Label adds a label.
func (b *PodBuilder) Label(k, v string) *PodBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}

// Annotation adds an annotation.
func (b *PodBuilder) Annotation(k, v string) *PodBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[k] = v
	return b
}

// OnNode binds the pod to a node.
func (b *PodBuilder) OnNode(name string) *PodBuilder { b.pod.Spec.NodeName = name; return b }

// Request adds a request of the main container.
func (b *PodBuilder) Request(name v1.ResourceName, qty string) *PodBuilder {
	setQty(&b.pod.Spec.Containers[0].Resources.Requests, name, qty)
	return b
}

// CPU requests cpu ("500m", "2").
func (b *PodBuilder) CPU(qty string) *PodBuilder { return b.Request(v1.ResourceCPU, qty) }

// Memory requests memory ("4Gi").
func (b *PodBuilder) Memory(qty string) *PodBuilder { return b.Request(v1.ResourceMemory, qty) }

// GPU requests whole NVIDIA GPUs.
func (b *PodBuilder) GPU(n int64) *PodBuilder {
	return b.Request(GPU, resource.NewQuantity(n, resource.DecimalSI).String())
}

// InitContainer adds an init container with the given requests (name -> quantity).
func (b *PodBuilder) InitContainer(requests map[v1.ResourceName]string) *PodBuilder {
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, container("init", requests, nil))
	return b
}

// Sidecar adds a restartable init container (restartPolicy Always).
func (b *PodBuilder) Sidecar(requests map[v1.ResourceName]string) *PodBuilder {
	always := v1.ContainerRestartPolicyAlways
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, container("sidecar", requests, &always))
	return b
}

// Overhead sets the pod overhead.
func (b *PodBuilder) Overhead(name v1.ResourceName, qty string) *PodBuilder {
	setQty(&b.pod.Spec.Overhead, name, qty)
	return b
}

// HostPort binds a TCP host port on all addresses.
func (b *PodBuilder) HostPort(port int32) *PodBuilder {
	c := &b.pod.Spec.Containers[0]
	c.Ports = append(c.Ports, v1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: v1.ProtocolTCP})
	return b
}

// NodeSelector adds a node selector entry.
func (b *PodBuilder) NodeSelector(k, v string) *PodBuilder {
	if b.pod.Spec.NodeSelector == nil {
		b.pod.Spec.NodeSelector = map[string]string{}
	}
	b.pod.Spec.NodeSelector[k] = v
	return b
}

// Toleration tolerates every taint with the key.
func (b *PodBuilder) Toleration(key string) *PodBuilder {
	b.pod.Spec.Tolerations = append(b.pod.Spec.Tolerations, v1.Toleration{Key: key, Operator: v1.TolerationOpExists})
	return b
}

// RequireNodeLabelIn adds a required node affinity term: key In values.
func (b *PodBuilder) RequireNodeLabelIn(key string, values ...string) *PodBuilder {
	a := b.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{}}
	}
	ns := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
		{Key: key, Operator: v1.NodeSelectorOpIn, Values: values},
	}})
	return b
}

// AntiAffinity adds required pod anti-affinity to pods labelled k=v within topologyKey.
func (b *PodBuilder) AntiAffinity(topologyKey, k, v string) *PodBuilder {
	a := b.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(topologyKey, k, v))
	return b
}

// Affinity adds required pod affinity to pods labelled k=v within topologyKey.
func (b *PodBuilder) Affinity(topologyKey, k, v string) *PodBuilder {
	a := b.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(topologyKey, k, v))
	return b
}

// Spread adds a DoNotSchedule topology spread constraint over pods labelled k=v.
func (b *PodBuilder) Spread(topologyKey string, maxSkew int32, k, v string) *PodBuilder {
	b.pod.Spec.TopologySpreadConstraints = append(b.pod.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: topologyKey, WhenUnsatisfiable: v1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
	})
	return b
}

// Claim mounts a PersistentVolumeClaim.
func (b *PodBuilder) Claim(name string) *PodBuilder {
	b.pod.Spec.Volumes = append(b.pod.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	return b
}

func (b *PodBuilder) affinity() *v1.Affinity {
	if b.pod.Spec.Affinity == nil {
		b.pod.Spec.Affinity = &v1.Affinity{}
	}
	return b.pod.Spec.Affinity
}

func term(topologyKey, k, v string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{TopologyKey: topologyKey,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}}
}

func container(name string, requests map[v1.ResourceName]string, restart *v1.ContainerRestartPolicy) v1.Container {
	c := v1.Container{Name: name, RestartPolicy: restart}
	for n, q := range requests {
		setQty(&c.Resources.Requests, n, q)
	}
	return c
}

func setQty(rl *v1.ResourceList, name v1.ResourceName, qty string) {
	if *rl == nil {
		*rl = v1.ResourceList{}
	}
	(*rl)[name] = resource.MustParse(qty)
}
