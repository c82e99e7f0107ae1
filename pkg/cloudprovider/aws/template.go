package aws

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/dra"
	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// Auto Scaling group tags read by the provider.
const (
	// TagNodeTemplate prefixes the scale-from-zero overrides:
	// resources/<name>, label/<key> and taint/<key>.
	TagNodeTemplate = "k8s.io/cluster-autoscaler/node-template/"
	// TagEKSNodeGroup is set by EKS on the groups of managed node groups,
	// whose nodes carry LabelEKSNodeGroup.
	TagEKSNodeGroup = "eks:nodegroup-name"
)

// Labels EKS puts on the nodes of managed node groups.
const (
	LabelEKSNodeGroup    = "eks.amazonaws.com/nodegroup"
	LabelEKSCapacityType = "eks.amazonaws.com/capacityType"
)

// templateOverrides are the node-template tags of one group, parsed.
type templateOverrides struct {
	resources v1.ResourceList
	labels    map[string]string
	taints    []v1.Taint
	// ignored are recognised tags the provider does not apply.
	ignored []string
}

// parseTemplateTags reads every node-template tag. Any malformed tag is an
// error naming the tag and its value: a template the provider cannot read
// exactly is withheld rather than guessed.
func parseTemplateTags(tags map[string]string) (templateOverrides, error) {
	o := templateOverrides{resources: v1.ResourceList{}, labels: map[string]string{}}
	keys := make([]string, 0, len(tags))
	for k := range tags {
		if strings.HasPrefix(k, TagNodeTemplate) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := o.add(k, tags[k]); err != nil {
			return o, fmt.Errorf("tag %q=%q: %w", k, tags[k], err)
		}
	}
	return o, nil
}

func (o *templateOverrides) add(key, value string) error {
	if strings.HasPrefix(key, TagAutoscalingOptions) {
		return nil // per-group options, read by readOptions
	}
	kind, name, _ := strings.Cut(strings.TrimPrefix(key, TagNodeTemplate), "/")
	if name == "" {
		return fmt.Errorf("want %s{resources,label,taint}/<name>", TagNodeTemplate)
	}
	switch kind {
	case "resources":
		if msgs := validation.IsQualifiedName(name); len(msgs) > 0 {
			return fmt.Errorf("resource name: %s", strings.Join(msgs, "; "))
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return fmt.Errorf("resource quantity: %w", err)
		}
		if q.Sign() < 0 {
			return fmt.Errorf("resource quantity: must not be negative")
		}
		o.resources[v1.ResourceName(name)] = q
	case "label":
		if msgs := validation.IsQualifiedName(name); len(msgs) > 0 {
			return fmt.Errorf("label key: %s", strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			return fmt.Errorf("label value: %s", strings.Join(msgs, "; "))
		}
		o.labels[name] = value
	case "taint":
		t, err := parseTaint(name, value)
		if err != nil {
			return err
		}
		o.taints = append(o.taints, t)
	default:
		return fmt.Errorf("unknown kind %q: want resources, label or taint", kind)
	}
	return nil
}

// parseTaint reads "value:Effect", or a bare "Effect" for a taint with no
// value (the form the EKS guide shows).
func parseTaint(key, value string) (v1.Taint, error) {
	if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
		return v1.Taint{}, fmt.Errorf("taint key: %s", strings.Join(msgs, "; "))
	}
	val, effect := "", value
	if i := strings.LastIndex(value, ":"); i >= 0 {
		val, effect = value[:i], value[i+1:]
	}
	switch e := v1.TaintEffect(effect); e {
	case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		return v1.Taint{}, fmt.Errorf("taint effect: want value:NoSchedule, value:PreferNoSchedule or value:NoExecute, got effect %q", effect)
	}
	if val != "" {
		if msgs := validation.IsValidLabelValue(val); len(msgs) > 0 {
			return v1.Taint{}, fmt.Errorf("taint value: %s", strings.Join(msgs, "; "))
		}
	}
	return v1.Taint{Key: key, Value: val, Effect: v1.TaintEffect(effect)}, nil
}

// templateInput is everything a group's template is made of.
type templateInput struct {
	group        string
	instanceType string
	// ephemeralGiB is the largest EBS volume of the launch template or
	// configuration, 0 when none is given there.
	ephemeralGiB int64
	zone, region string
	tags         map[string]string
	spot         bool
}

// templateResult is a built template and what it says about the group.
type templateResult struct {
	node *v1.Node
	// slices are the ResourceSlices a new node publishes (NVIDIA GPUs
	// under the DRA driver).
	slices []*resourceapi.ResourceSlice
	price  float64
	// ignored are tags read but not applied, for the group's report.
	ignored []string
}

// buildTemplate makes the node a new instance of the group would register
// as. The instance type table gives cpu, memory and GPUs; node-template
// tags win over it, and an instance type missing from the table is
// accepted when the tags give both cpu and memory.
func buildTemplate(in templateInput, prices Prices) (templateResult, error) {
	o, err := parseTemplateTags(in.tags)
	if err != nil {
		return templateResult{}, err
	}
	it, known := LookupInstanceType(in.instanceType)
	_, hasCPU := o.resources[v1.ResourceCPU]
	_, hasMem := o.resources[v1.ResourceMemory]
	if !known && !(hasCPU && hasMem) {
		return templateResult{}, fmt.Errorf("instance type %q is not in the instance type table; tag the group with %sresources/cpu and %sresources/memory",
			in.instanceType, TagNodeTemplate, TagNodeTemplate)
	}
	capacity := v1.ResourceList{}
	labels := map[string]string{}
	var devices []dra.DeviceSet
	if known {
		capacity[v1.ResourceCPU] = *resource.NewQuantity(it.VCPU, resource.DecimalSI)
		capacity[v1.ResourceMemory] = *resource.NewQuantity(it.MemoryMiB*1024*1024, resource.BinarySI)
		if it.GPUs > 0 {
			labels[gpu.LabelEKSAccelerator] = it.Accelerator
			all := maps.Clone(labels)
			maps.Copy(all, o.labels)
			devices, err = acceleratorCapacity(capacity, it, all)
			if err != nil {
				return templateResult{}, err
			}
		}
	}
	if in.ephemeralGiB > 0 {
		capacity[v1.ResourceEphemeralStorage] = *resource.NewQuantity(in.ephemeralGiB*1024*1024*1024, resource.BinarySI)
	}
	if ng := in.tags[TagEKSNodeGroup]; ng != "" {
		labels[LabelEKSNodeGroup] = ng
		labels[LabelEKSCapacityType] = "ON_DEMAND"
		if in.spot {
			labels[LabelEKSCapacityType] = "SPOT"
		}
	}
	maps.Copy(capacity, o.resources)
	maps.Copy(labels, o.labels)
	node := cloudprovider.TemplateNode(cloudprovider.TemplateSpec{
		Group: in.group, Capacity: capacity, Labels: labels, Taints: o.taints,
		InstanceType: in.instanceType, Zone: in.zone, Region: in.region, Arch: it.Arch,
	})
	slices, err := dra.TemplateSlices(node.Name, devices)
	if err != nil {
		return templateResult{}, err
	}
	return templateResult{node: node, slices: slices, price: prices.price(in.instanceType, it, in.spot), ignored: o.ignored}, nil
}

// acceleratorCapacity adds an accelerator type's devices to capacity as
// its device plugin advertises them, under the node's labels: NVIDIA GPUs
// partitioned by a MIG layout (label nvidia.com/mig.config=all-<profile>)
// or shared by time-slicing (nvidia.com/gpu.replicas), Neuron devices and
// their NeuronCores. NVIDIA GPUs of nodes whose device plugin is switched
// off (nvidia.com/gpu.deploy.device-plugin=false) are returned as the
// devices the NVIDIA DRA driver publishes instead.
func acceleratorCapacity(capacity v1.ResourceList, it InstanceType, labels map[string]string) ([]dra.DeviceSet, error) {
	if it.Resource != gpu.ResourceName {
		capacity[it.Resource] = *resource.NewQuantity(it.GPUs, resource.DecimalSI)
		if it.Cores > 0 {
			capacity[gpu.ResourceNeuronCore] = *resource.NewQuantity(it.Cores, resource.DecimalSI)
		}
		return nil, nil
	}
	model, known := gpu.LookupModel(it.Accelerator)
	if gpu.UsesDRADriver(labels) {
		if !known {
			return []dra.DeviceSet{dra.GenericDevices(gpu.DriverNVIDIA, int(it.GPUs))}, nil
		}
		return []dra.DeviceSet{dra.NVIDIAGPUs(model, int(it.GPUs))}, nil
	}
	rl, err := gpu.AdvertisedResources(it.GPUs, labels, model.MemoryGB)
	if err != nil {
		return nil, fmt.Errorf("tag %slabel/...: %w", TagNodeTemplate, err)
	}
	maps.Copy(capacity, rl)
	return nil, nil
}

// Prices override the table's on-demand prices and give spot prices, by
// instance type.
type Prices struct {
	OnDemand, Spot map[string]float64
}

// price is the hourly price of one instance; spot capacity without a spot
// price costs at most the on-demand price, and that is what it is given.
func (p Prices) price(instanceType string, it InstanceType, spot bool) float64 {
	if spot {
		if v, ok := p.Spot[instanceType]; ok {
			return v
		}
	}
	if v, ok := p.OnDemand[instanceType]; ok {
		return v
	}
	return it.PricePerHour
}
