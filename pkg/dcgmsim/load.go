package dcgmsim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Pod annotations that set a pod's simulated load.
const (
	// AnnotationUtil is the GPU utilization, in percent (0 to 100), of every
	// GPU the pod holds.
	AnnotationUtil = "gpuscale.dev/simulated-gpu-util"
	// AnnotationRamp is how long the utilization takes to move linearly from
	// its current value to AnnotationUtil (a Go duration, default 0).
	AnnotationRamp = "gpuscale.dev/simulated-gpu-util-ramp"
)

// Load is a pod's GPU utilization target and how it is reached.
type Load struct {
	// Util is the target utilization in percent, 0 to 100.
	Util float64
	// Ramp is the time to go linearly from the utilization at the moment the
	// target was set to Util; 0 jumps at once.
	Ramp time.Duration
}

// Validate refuses a utilization outside [0, 100] or a negative ramp.
func (l Load) Validate() error {
	if !(l.Util >= 0 && l.Util <= 100) { // also catches NaN
		return fmt.Errorf("util: must be between 0 and 100, got %s", strconv.FormatFloat(l.Util, 'g', -1, 64))
	}
	if l.Ramp < 0 {
		return fmt.Errorf("ramp: must not be negative, got %s", l.Ramp)
	}
	return nil
}

// LoadFromAnnotations reads AnnotationUtil and AnnotationRamp. ok is false
// when the pod has no AnnotationUtil.
func LoadFromAnnotations(annotations map[string]string) (load Load, ok bool, err error) {
	u, ok := annotations[AnnotationUtil]
	if !ok {
		return Load{}, false, nil
	}
	load.Util, err = strconv.ParseFloat(u, 64)
	if err != nil {
		return Load{}, true, fmt.Errorf("annotation %s: not a number, got %q", AnnotationUtil, u)
	}
	if r, has := annotations[AnnotationRamp]; has && r != "" {
		load.Ramp, err = time.ParseDuration(r)
		if err != nil {
			return Load{}, true, fmt.Errorf("annotation %s: not a duration, got %q", AnnotationRamp, r)
		}
	}
	if err := load.Validate(); err != nil {
		return Load{}, true, fmt.Errorf("annotations %s/%s: %w", AnnotationUtil, AnnotationRamp, err)
	}
	return load, true, nil
}

// PodLoad is one pod's load now.
type PodLoad struct {
	Namespace string  `json:"namespace"`
	Pod       string  `json:"pod"`
	Util      float64 `json:"util"`
	Target    float64 `json:"target"`
	// RampLeft is how much of the ramp remains ("0s" once reached).
	RampLeft string `json:"rampLeft"`
}

// ramp is a linear move from From at Start to To at Start+Duration.
type ramp struct {
	from, to float64
	start    time.Time
	duration time.Duration
}

func (r ramp) at(now time.Time) float64 {
	elapsed := now.Sub(r.start)
	if r.duration <= 0 || elapsed >= r.duration {
		return r.to
	}
	if elapsed <= 0 {
		return r.from
	}
	return r.from + (r.to-r.from)*float64(elapsed)/float64(r.duration)
}

// LoadBook holds every pod's load: the last target set, by annotation or by
// the control endpoint, wins. Pods with no load set run at 0. It is safe for
// concurrent use.
type LoadBook struct {
	clock clock.PassiveClock

	mu    sync.Mutex
	ramps map[string]ramp // "namespace/pod"
	// annotated remembers the annotations last applied per pod, so that an
	// unrelated pod update does not restart a ramp or undo a later PUT.
	annotated map[string]Load
}

// NewLoadBook returns an empty book reading time from clk.
func NewLoadBook(clk clock.PassiveClock) *LoadBook {
	return &LoadBook{clock: clk, ramps: map[string]ramp{}, annotated: map[string]Load{}}
}

// Set moves pod "namespace/name" toward l, starting from its utilization now.
func (b *LoadBook) Set(podKey string, l Load) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setLocked(podKey, l)
}

func (b *LoadBook) setLocked(podKey string, l Load) {
	now := b.clock.Now()
	b.ramps[podKey] = ramp{from: b.ramps[podKey].at(now), to: l.Util, start: now, duration: l.Ramp}
}

// Observe applies a pod's annotations when they differ from those last
// applied to it: a new value sets the target; a removed annotation sets 0 at
// once. It returns the annotation error, if any, leaving the load as it was.
func (b *LoadBook) Observe(pod *corev1.Pod) error {
	key := pod.Namespace + "/" + pod.Name
	l, has, err := LoadFromAnnotations(pod.Annotations)
	if err != nil {
		return fmt.Errorf("pod %s: %w", key, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	prev, had := b.annotated[key]
	switch {
	case has && (!had || prev != l):
		b.annotated[key] = l
		b.setLocked(key, l)
	case !has && had:
		delete(b.annotated, key)
		b.setLocked(key, Load{})
	}
	return nil
}

// Forget drops a deleted pod's load, so a new pod of the same name starts idle.
func (b *LoadBook) Forget(podKey string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.ramps, podKey)
	delete(b.annotated, podKey)
}

// Util is pod "namespace/name"'s utilization now.
func (b *LoadBook) Util(podKey string) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ramps[podKey].at(b.clock.Now())
}

// Get returns one pod's load; ok is false when none was set.
func (b *LoadBook) Get(podKey string) (PodLoad, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.ramps[podKey]
	if !ok {
		return PodLoad{}, false
	}
	return b.podLoad(podKey, r), true
}

// List returns every pod with a load set, sorted by namespace and name.
func (b *LoadBook) List() []PodLoad {
	b.mu.Lock()
	defer b.mu.Unlock()
	keys := make([]string, 0, len(b.ramps))
	for k := range b.ramps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]PodLoad, 0, len(keys))
	for _, k := range keys {
		out = append(out, b.podLoad(k, b.ramps[k]))
	}
	return out
}

func (b *LoadBook) podLoad(key string, r ramp) PodLoad {
	now := b.clock.Now()
	ns, name, _ := strings.Cut(key, "/")
	left := r.start.Add(r.duration).Sub(now)
	if left < 0 {
		left = 0
	}
	return PodLoad{Namespace: ns, Pod: name, Util: r.at(now), Target: r.to, RampLeft: left.String()}
}
