package scenario

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/inputlimit"
	"github.com/gpuscale/gpuscale/pkg/strictyaml"
)

// Defaults for the fields a scenario may leave out.
const (
	DefaultSampleInterval    = time.Minute
	DefaultProvisioningDelay = 2 * time.Minute
	DefaultDevicePluginDelay = time.Minute
	DefaultHPASyncPeriod     = 15 * time.Second
	DefaultCreationFailure   = time.Minute
	// DefaultInterruptionNotice is an EC2 spot interruption notice.
	DefaultInterruptionNotice = 2 * time.Minute
	// DefaultInterruptionTaint is the AWS Node Termination Handler's.
	DefaultInterruptionTaint = autoscaler.TaintAWSSpotInterruption
	DefaultNamespace         = "default"
)

// Load reads and parses the scenario file at path.
func Load(path string) (*Scenario, error) {
	data, err := inputlimit.ReadFile(path, inputlimit.ScenarioFileBytes)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Parse decodes YAML strictly, fills defaults and validates.
func Parse(data []byte) (*Scenario, error) {
	var s Scenario
	if err := strictyaml.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	s.SetDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// SetDefaults fills every optional field left out.
func (s *Scenario) SetDefaults() {
	def := func(d *metav1.Duration, v time.Duration) {
		if d.Duration == 0 {
			d.Duration = v
		}
	}
	def(&s.SampleInterval, DefaultSampleInterval)
	def(&s.ProvisioningDelay, DefaultProvisioningDelay)
	def(&s.HPASyncPeriod, DefaultHPASyncPeriod)
	def(&s.CreationFailureDelay, DefaultCreationFailure)
	def(&s.InterruptionNotice, DefaultInterruptionNotice)
	if s.InterruptionTaint == "" {
		s.InterruptionTaint = DefaultInterruptionTaint
	}
	for i := range s.DaemonSets {
		if s.DaemonSets[i].Namespace == "" {
			s.DaemonSets[i].Namespace = "kube-system"
		}
	}
	s.setStorageDefaults()
	if s.DevicePluginDelay == nil {
		s.DevicePluginDelay = &metav1.Duration{Duration: DefaultDevicePluginDelay}
	}
	if s.Scheduler.Scoring == "" {
		s.Scheduler.Scoring = LeastAllocated
	}
	if len(s.Scheduler.Resources) == 0 {
		s.Scheduler.Resources = map[v1.ResourceName]int64{v1.ResourceCPU: 1, v1.ResourceMemory: 1}
	}
	for i := range s.NodeGroups {
		g := &s.NodeGroups[i]
		if g.InitialSize == nil {
			n := g.MinSize
			g.InitialSize = &n
		}
	}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		if w.Namespace == "" {
			w.Namespace = DefaultNamespace
		}
		for j := range w.Jobs {
			if w.Jobs[j].Count == 0 {
				w.Jobs[j].Count = max(1, w.Jobs[j].Gang)
			}
		}
		if d := w.Deployment; d != nil && d.Load != nil && d.Load.Interpolation == "" {
			d.Load.Interpolation = "step"
		}
		if d := w.Deployment; d != nil && d.Serving != nil && d.Serving.SLO.Duration == 0 {
			d.Serving.SLO.Duration = DefaultServingSLO
		}
	}
	for i := range s.CapacityBuffers {
		if s.CapacityBuffers[i].Namespace == "" {
			s.CapacityBuffers[i].Namespace = DefaultNamespace
		}
	}
}

// Validate reports every problem, each naming the field and the value.
func (s *Scenario) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
	}
	if s.Name == "" {
		bad("name", "must not be empty")
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"duration", s.Duration.Duration}, {"provisioningDelay", s.ProvisioningDelay.Duration},
		{"devicePluginDelay", s.DevicePluginDelay.Duration}, {"nodeDeletionDelay", s.NodeDeletionDelay.Duration},
		{"creationFailureDelay", s.CreationFailureDelay.Duration}, {"interruptionNotice", s.InterruptionNotice.Duration}} {
		if d.v < 0 {
			bad(d.field, "must not be negative, got %s", d.v)
		}
	}
	if errs := validation.IsQualifiedName(s.InterruptionTaint); s.InterruptionTaint != "" && len(errs) > 0 {
		bad("interruptionTaint", "%q: %s", s.InterruptionTaint, strings.Join(errs, "; "))
	}
	switch si := s.SampleInterval.Duration; {
	case si < MinSampleInterval:
		bad("sampleInterval", "must be at least %s, got %s", MinSampleInterval, si)
	case s.Duration.Duration/si > MaxSamples:
		bad("sampleInterval", "%s over a duration of %s is %d samples, over the %d limit; sample less often",
			si, s.Duration.Duration, s.Duration.Duration/si, MaxSamples)
	}
	if s.HPASyncPeriod.Duration <= 0 {
		bad("hpaSyncPeriod", "must be positive, got %s", s.HPASyncPeriod.Duration)
	}
	if sc := s.Scheduler.Scoring; sc != LeastAllocated && sc != MostAllocated {
		bad("scheduler.scoring", "must be %s or %s, got %q", LeastAllocated, MostAllocated, sc)
	}
	for r, w := range s.Scheduler.Resources {
		if w <= 0 {
			bad("scheduler.resources["+string(r)+"]", "weight must be positive, got %d", w)
		}
	}
	if d, err := s.Decision(); err != nil {
		errs = append(errs, err)
	} else if _, err := autoscaler.New(d.Autoscaler); err != nil {
		bad("autoscaler", "%v", err)
	}
	if len(s.NodeGroups) == 0 {
		bad("nodeGroups", "at least one node group is needed")
	}
	seen := map[string]bool{}
	for i := range s.NodeGroups {
		errs = append(errs, s.NodeGroups[i].validate(fmt.Sprintf("nodeGroups[%d]", i), seen)...)
	}
	seen = map[string]bool{}
	for i := range s.Workloads {
		if s.Workloads[i].Deployment != nil && s.Duration.Duration == 0 {
			bad(fmt.Sprintf("workloads[%d].deployment", i), "a scenario with Deployments needs a duration (they never finish)")
		}
		errs = append(errs, s.Workloads[i].validate(fmt.Sprintf("workloads[%d]", i), seen)...)
	}
	for i, d := range s.DaemonSets {
		if msgs := validation.IsDNS1123Label(d.Name); len(msgs) > 0 {
			bad(fmt.Sprintf("daemonSets[%d].name", i), "must be a DNS label, got %q", d.Name)
		}
	}
	errs = append(errs, s.validateStorage()...)
	errs = append(errs, s.validateBuffers()...)
	if len(errs) == 0 {
		errs = s.checkObjects()
	}
	return errors.Join(errs...)
}

func (g *NodeGroup) validate(path string, seen map[string]bool) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: "+format, append([]any{path, field}, args...)...))
	}
	if msgs := validation.IsDNS1123Label(g.Name); len(msgs) > 0 || len(g.Name) > 50 {
		bad("name", "must be a DNS label of at most 50 characters, got %q", g.Name)
	}
	if seen[g.Name] {
		bad("name", "%q is used twice", g.Name)
	}
	seen[g.Name] = true
	switch {
	case g.MinSize < 0:
		bad("minSize", "must not be negative, got %d", g.MinSize)
	case g.MaxSize < g.MinSize:
		bad("maxSize", "must be at least minSize (%d), got %d", g.MinSize, g.MaxSize)
	case g.MaxSize > MaxGroupSize:
		bad("maxSize", "must be at most %d (the simulator holds every node in memory), got %d", MaxGroupSize, g.MaxSize)
	case *g.InitialSize < g.MinSize || *g.InitialSize > g.MaxSize:
		bad("initialSize", "must be within minSize..maxSize (%d..%d), got %d", g.MinSize, g.MaxSize, *g.InitialSize)
	}
	if g.PricePerHour < 0 {
		bad("pricePerHour", "must not be negative, got %g", g.PricePerHour)
	}
	for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		if q, ok := g.Capacity[r]; !ok || q.Sign() <= 0 {
			bad("capacity."+string(r), "must be positive, got %q", q.String())
		}
	}
	for _, r := range sortedResources(g.Capacity) {
		if q := g.Capacity[r]; q.Sign() < 0 {
			bad("capacity."+string(r), "must not be negative, got %q", q.String())
		} else if countedInUnits(r) && q.MilliValue()%1000 != 0 {
			bad("capacity."+string(r), "must be a whole number (%s is counted in units), got %q", r, q.String())
		}
	}
	for _, d := range slices.Sorted(maps.Keys(g.VolumeLimits)) {
		if d == "" {
			bad("volumeLimits", "a driver name must not be empty")
		} else if n := g.VolumeLimits[d]; n < 0 {
			bad(fmt.Sprintf("volumeLimits[%s]", d), "must not be negative, got %d", n)
		}
	}
	for i, w := range g.Stockouts {
		if w.From.Duration < 0 || w.To.Duration <= w.From.Duration {
			bad(fmt.Sprintf("stockouts[%d]", i), "want 0 <= from < to, got from %s to %s", w.From.Duration, w.To.Duration)
		}
	}
	g.validateGPUFailures(bad)
	g.validateCapacity(bad)
	for i, in := range g.Interruptions {
		switch {
		case in.At.Duration < 0:
			bad(fmt.Sprintf("interruptions[%d].at", i), "must not be negative, got %s", in.At.Duration)
		case in.Count < 1 || in.Count > MaxGroupSize:
			bad(fmt.Sprintf("interruptions[%d].count", i), "must be from 1 to %d, got %d", MaxGroupSize, in.Count)
		}
	}
	if g.ReservedNodes < 0 || g.ReservedNodes > g.MaxSize {
		bad("reservedNodes", "must be within 0..maxSize (%d), got %d", g.MaxSize, g.ReservedNodes)
	}
	if r := g.InterruptionsPerHour; !(r >= 0) || math.IsInf(r, 0) {
		bad("interruptionsPerHour", "must be a finite number of at least 0, got %s", strconv.FormatFloat(r, 'g', -1, 64))
	}
	return errs
}

func (w *Workload) validate(path string, seen map[string]bool) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: "+format, append([]any{path, field}, args...)...))
	}
	if msgs := validation.IsDNS1123Label(w.Name); len(msgs) > 0 {
		bad("name", "must be a DNS label, got %q", w.Name)
	}
	if seen[w.Namespace+"/"+w.Name] {
		bad("name", "%q is used twice in namespace %q", w.Name, w.Namespace)
	}
	seen[w.Namespace+"/"+w.Name] = true
	for _, r := range sortedResources(w.Pod.Requests) {
		if q := w.Pod.Requests[r]; q.Sign() < 0 {
			bad("pod.requests."+string(r), "must not be negative, got %q", q.String())
		} else if countedInUnits(r) && q.MilliValue()%1000 != 0 {
			// kube-scheduler and the API server take extended resources in
			// units: "0.5" GPUs would be refused by a real cluster.
			bad("pod.requests."+string(r), "must be a whole number (%s is counted in units), got %q", r, q.String())
		}
	}
	switch {
	case w.Deployment == nil && len(w.Jobs) == 0:
		bad("deployment", "a workload needs a deployment or jobs")
	case w.Deployment != nil && len(w.Jobs) > 0:
		bad("jobs", "a workload is a deployment or jobs, not both")
	case w.Deployment != nil:
		errs = append(errs, w.Deployment.validate(path+".deployment")...)
		if sv := w.Deployment.Serving; sv != nil {
			errs = append(errs, sv.validateGPUs(path, w.Pod)...)
		}
	}
	if b := w.PDB; b != nil {
		switch {
		case (b.MinAvailable == nil) == (b.MaxUnavailable == nil):
			bad("pdb", "give one of minAvailable and maxUnavailable")
		case b.MinAvailable != nil && *b.MinAvailable < 0:
			bad("pdb.minAvailable", "must not be negative, got %d", *b.MinAvailable)
		case b.MaxUnavailable != nil && *b.MaxUnavailable < 0:
			bad("pdb.maxUnavailable", "must not be negative, got %d", *b.MaxUnavailable)
		}
	}
	w.validateProvisioningClass(bad)
	for i, b := range w.Jobs {
		p := fmt.Sprintf("jobs[%d]", i)
		if b.At.Duration < 0 {
			bad(p+".at", "must not be negative, got %s", b.At.Duration)
		}
		if b.Count < 0 {
			bad(p+".count", "must not be negative, got %d", b.Count)
		} else if b.Count > MaxJobCount {
			bad(p+".count", "must be at most %d (the simulator holds every pod in memory), got %d", MaxJobCount, b.Count)
		}
		switch {
		case b.Gang < 0:
			bad(p+".gang", "must not be negative, got %d", b.Gang)
		case b.Gang > 1 && b.Count%b.Gang != 0:
			bad(p+".count", "must be a multiple of gang %d, got %d", b.Gang, b.Count)
		}
		if b.Duration.Duration <= 0 {
			bad(p+".duration", "must be positive, got %s", b.Duration.Duration)
		}
	}
	return errs
}

func (d *Deployment) validate(path string) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: "+format, append([]any{path, field}, args...)...))
	}
	if d.Replicas < 0 {
		bad("replicas", "must not be negative, got %d", d.Replicas)
	} else if d.Replicas > MaxReplicas {
		bad("replicas", "must be at most %d (the simulator holds every pod in memory), got %d", MaxReplicas, d.Replicas)
	}
	if d.ReadyAfter.Duration < 0 {
		bad("readyAfter", "must not be negative, got %s", d.ReadyAfter.Duration)
	}
	if d.HPA != nil {
		errs = append(errs, d.validateHPA(path+".hpa", d.HPA)...)
		if d.Load == nil && d.Serving == nil {
			bad("load", "an HPA needs a load curve or serving to read")
		}
	}
	if d.Serving != nil {
		errs = append(errs, d.Serving.validate(path+".serving", d)...)
	}
	for _, name := range slices.Sorted(maps.Keys(d.Policies)) {
		h := d.Policies[name]
		errs = append(errs, d.validateHPA(path+".policies."+name, &h)...)
	}
	if l := d.Load; l != nil {
		if l.CapacityPerPod <= 0 {
			bad("load.capacityPerPod", "must be positive, got %g", l.CapacityPerPod)
		}
		if l.Interpolation != "step" && l.Interpolation != "linear" {
			bad("load.interpolation", "must be step or linear, got %q", l.Interpolation)
		}
		if len(l.Points) == 0 {
			bad("load.points", "at least one point is needed")
		}
		for i, p := range l.Points {
			if i > 0 && p.At.Duration < l.Points[i-1].At.Duration {
				bad(fmt.Sprintf("load.points[%d].at", i), "must not go back in time, got %s after %s", p.At.Duration, l.Points[i-1].At.Duration)
			}
			if p.Value < 0 {
				bad(fmt.Sprintf("load.points[%d].value", i), "must not be negative, got %g", p.Value)
			}
		}
	}
	return errs
}

// validateHPA checks an HPA spec of d (its hpa, or one of its policies).
func (d *Deployment) validateHPA(path string, h *autoscalingv2.HorizontalPodAutoscalerSpec) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: "+format, append([]any{path, field}, args...)...))
	}
	external := false
	for _, m := range h.Metrics {
		external = external || m.Type == autoscalingv2.ExternalMetricSourceType
	}
	switch {
	case h.MinReplicas != nil && *h.MinReplicas < 0:
		bad("minReplicas", "must not be negative, got %d", *h.MinReplicas)
	case h.MinReplicas != nil && *h.MinReplicas == 0 && !external:
		bad("minReplicas", "0 (scale to zero) needs an External metric, which reads the load while no pod runs")
	}
	if h.MaxReplicas < 1 || (h.MinReplicas != nil && h.MaxReplicas < *h.MinReplicas) {
		bad("maxReplicas", "must be at least 1 and minReplicas, got %d", h.MaxReplicas)
	} else if h.MaxReplicas > MaxReplicas {
		bad("maxReplicas", "must be at most %d (the simulator holds every pod in memory), got %d", MaxReplicas, h.MaxReplicas)
	}
	if len(h.Metrics) == 0 {
		bad("metrics", "at least one metric is needed")
	}
	for i, m := range h.Metrics {
		switch {
		case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil:
			t := m.Pods.Target
			if t.Type != autoscalingv2.AverageValueMetricType || t.AverageValue == nil || t.AverageValue.Sign() <= 0 {
				bad(fmt.Sprintf("metrics[%d].pods.target", i), "must be a positive AverageValue, got type %q", t.Type)
			}
		case m.Type == autoscalingv2.ExternalMetricSourceType && m.External != nil:
			t := m.External.Target
			q := t.Value
			if t.Type == autoscalingv2.AverageValueMetricType {
				q = t.AverageValue
			}
			if (t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType) || q == nil || q.Sign() <= 0 {
				bad(fmt.Sprintf("metrics[%d].external.target", i), "must be a positive Value or AverageValue, got type %q", t.Type)
			}
			if d.Load == nil && d.Serving == nil {
				bad(fmt.Sprintf("metrics[%d].external", i), "an External metric reads the Deployment's load curve or its requests in flight, and it has neither")
			}
		default:
			bad(fmt.Sprintf("metrics[%d].type", i), "the simulator serves Pods metrics (each pod's utilization) and External metrics (the Deployment's load or requests in flight), got %q", m.Type)
		}
	}
	if d.Serving != nil {
		errs = append(errs, servingMetrics(path, h)...)
	}
	return errs
}

// countedInUnits: GPUs, other extended resources (a name with a domain
// outside kubernetes.io) and pods are counted in whole units.
func countedInUnits(r v1.ResourceName) bool {
	name := string(r)
	if gpu.IsGPUResource(r) || r == v1.ResourcePods {
		return true
	}
	return strings.Contains(name, "/") && !strings.HasPrefix(name, "kubernetes.io/") && !strings.Contains(name, ".kubernetes.io/")
}

func sortedResources(rl v1.ResourceList) []v1.ResourceName {
	out := make([]v1.ResourceName, 0, len(rl))
	for r := range rl {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
