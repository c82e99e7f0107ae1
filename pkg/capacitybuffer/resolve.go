package capacitybuffer

import (
	"fmt"
	"math"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Buffer is a resolved buffer as the decision core plans with it: the
// shape of one chunk and how many chunks to hold.
type Buffer struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid,omitempty"`
	// Replicas is the number of chunks to hold.
	Replicas int32 `json:"replicas"`
	// Template is the shape of one chunk.
	Template v1.PodTemplateSpec `json:"template"`
}

// Key is namespace/name.
func (b Buffer) Key() string { return b.Namespace + "/" + b.Name }

// Scalable is a workload a buffer may borrow from: its pod template and
// its current replicas.
type Scalable struct {
	Template v1.PodTemplateSpec
	Replicas int32
}

// ScalableKey names a workload in a namespace. Group is "apps" or
// "batch"; Kind one of ScalableKinds.
type ScalableKey struct {
	Namespace, Group, Kind, Name string
}

// ScalableKinds are the workloads a scalableRef may name, by API group.
var scalableKinds = map[string]string{
	"Deployment":  "apps",
	"ReplicaSet":  "apps",
	"StatefulSet": "apps",
	"Job":         "batch",
}

// ScalableKinds lists the kinds a scalableRef may name, sorted.
func ScalableKinds() []string {
	out := make([]string, 0, len(scalableKinds))
	for k := range scalableKinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Sources are the objects buffers refer to, as the shell found them.
type Sources struct {
	// Templates are PodTemplates by namespace/name.
	Templates map[string]*v1.PodTemplate
	// Scalables are workloads by key.
	Scalables map[ScalableKey]Scalable
}

// Resolution is what resolving a buffer found: the buffer to plan with, the
// template it came from (for the status), and the generation of a
// PodTemplate it names.
type Resolution struct {
	Buffer             Buffer
	TemplateName       string
	TemplateGeneration *int64
}

// Resolve turns a buffer into the chunks to hold. The error names the
// field at fault and its value.
func Resolve(b *CapacityBuffer, src Sources) (Resolution, error) {
	if s := b.Strategy(); s != StrategyActiveCapacity {
		return Resolution{}, fmt.Errorf("spec.provisioningStrategy: %q is not served (only %q)", s, StrategyActiveCapacity)
	}
	spec := b.Spec
	if err := checkSpec(spec); err != nil {
		return Resolution{}, err
	}
	res := Resolution{Buffer: Buffer{Namespace: b.Namespace, Name: b.Name, UID: b.UID}}
	var scalableReplicas int32
	switch {
	case spec.PodTemplateRef != nil:
		t := src.Templates[b.Namespace+"/"+spec.PodTemplateRef.Name]
		if t == nil {
			return Resolution{}, fmt.Errorf("spec.podTemplateRef.name: PodTemplate %s/%s not found", b.Namespace, spec.PodTemplateRef.Name)
		}
		res.Buffer.Template = *t.Template.DeepCopy()
		res.TemplateName = t.Name
		gen := t.Generation
		res.TemplateGeneration = &gen
	default:
		ref := spec.ScalableRef
		group, known := scalableKinds[ref.Kind]
		if !known {
			return Resolution{}, fmt.Errorf("spec.scalableRef.kind: %q is not one of %s", ref.Kind, strings.Join(ScalableKinds(), ", "))
		}
		if ref.APIGroup != group {
			return Resolution{}, fmt.Errorf("spec.scalableRef.apiGroup: %q, want %q for kind %s", ref.APIGroup, group, ref.Kind)
		}
		s, ok := src.Scalables[ScalableKey{Namespace: b.Namespace, Group: group, Kind: ref.Kind, Name: ref.Name}]
		if !ok {
			return Resolution{}, fmt.Errorf("spec.scalableRef: %s %s/%s not found", ref.Kind, b.Namespace, ref.Name)
		}
		res.Buffer.Template = *s.Template.DeepCopy()
		scalableReplicas = s.Replicas
	}
	n, err := chunks(spec, scalableReplicas, res.Buffer.Template)
	if err != nil {
		return Resolution{}, err
	}
	res.Buffer.Replicas = n
	return res, nil
}

func checkSpec(spec Spec) error {
	switch {
	case spec.PodTemplateRef == nil && spec.ScalableRef == nil:
		return fmt.Errorf("spec: one of podTemplateRef and scalableRef must be set")
	case spec.PodTemplateRef != nil && spec.ScalableRef != nil:
		return fmt.Errorf("spec: podTemplateRef (%q) and scalableRef (%q) are both set; set one", spec.PodTemplateRef.Name, spec.ScalableRef.Name)
	case spec.Replicas != nil && *spec.Replicas < 0:
		return fmt.Errorf("spec.replicas: must not be negative, got %d", *spec.Replicas)
	case spec.Percentage != nil && *spec.Percentage < 0:
		return fmt.Errorf("spec.percentage: must not be negative, got %d", *spec.Percentage)
	case spec.Percentage != nil && spec.ScalableRef == nil:
		return fmt.Errorf("spec.percentage: %d needs spec.scalableRef (a percentage of what?)", *spec.Percentage)
	case spec.Replicas == nil && spec.Percentage == nil && spec.Limits == nil:
		return fmt.Errorf("spec: one of replicas, percentage and limits must be set")
	}
	return nil
}

// chunks is the number of chunks: the larger of replicas and the
// percentage of the scalable's replicas (rounded up), capped by limits;
// as many as the limits allow when neither is set.
func chunks(spec Spec, scalableReplicas int32, t v1.PodTemplateSpec) (int32, error) {
	want, bounded := int32(0), false
	if spec.Replicas != nil {
		want, bounded = *spec.Replicas, true
	}
	if spec.Percentage != nil {
		p := int32(math.Ceil(float64(scalableReplicas) * float64(*spec.Percentage) / 100))
		want, bounded = max(want, p), true
	}
	if spec.Limits == nil {
		return want, nil
	}
	limit, err := limitChunks(*spec.Limits, t)
	if err != nil {
		return 0, err
	}
	if !bounded || limit < want {
		return limit, nil
	}
	return want, nil
}

// limitChunks is how many chunks fit within limits: the least, over the
// limited resources a chunk requests, of limit / request.
func limitChunks(limits v1.ResourceList, t v1.PodTemplateSpec) (int32, error) {
	req := templateRequests(t)
	names := make([]string, 0, len(limits))
	for name := range limits {
		names = append(names, string(name))
	}
	sort.Strings(names)
	n, limited := int64(math.MaxInt32), false
	for _, name := range names {
		l := limits[v1.ResourceName(name)]
		if l.Sign() < 0 {
			return 0, fmt.Errorf("spec.limits.%s: must not be negative, got %s", name, l.String())
		}
		r, ok := req[v1.ResourceName(name)]
		if !ok || r.IsZero() {
			continue
		}
		limited = true
		n = min(n, l.MilliValue()/r.MilliValue())
	}
	if !limited {
		return 0, fmt.Errorf("spec.limits: the pod template requests none of the limited resources (%s)", strings.Join(names, ", "))
	}
	return int32(n), nil
}

// templateRequests sums a chunk's requests as the scheduler counts them:
// the containers' sum, or the largest init container's when larger.
func templateRequests(t v1.PodTemplateSpec) v1.ResourceList {
	out := v1.ResourceList{}
	for _, c := range t.Spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	for _, c := range t.Spec.InitContainers {
		for name, q := range c.Resources.Requests {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}
