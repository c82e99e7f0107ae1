package scenario

import (
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SyntheticDayName is the built-in scenario SyntheticDay builds.
const SyntheticDayName = "synthetic-day"

// SyntheticDay is a day of a large mixed cluster: CPU web Deployments and
// GPU inference Deployments, each with an HPA on a diurnal load (quiet at
// night, a peak in the afternoon, every Deployment a little shifted), and
// GPU training Jobs through the working hours. At the peak about 29,000
// pods run on about 1,100 nodes.
func SyntheticDay() *Scenario {
	s := &Scenario{
		Name:        SyntheticDayName,
		Description: "one day of a 1,000-node, 30,000-pod cluster: 24 web and 4 GPU inference Deployments with HPAs on diurnal load, GPU training Jobs",
		Seed:        1,
		Duration:    metav1.Duration{Duration: 24 * time.Hour},
	}
	s.Autoscaler = Settings{"expander": "least-waste"}
	gpuTaint := []v1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: v1.TaintEffectNoSchedule}}
	group := func(name, cpu, mem string, gpus int64, max, initial int, price float64) NodeGroup {
		g := NodeGroup{Name: name, MaxSize: max, InitialSize: &initial, PricePerHour: price, InstanceType: name,
			Capacity: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}}
		if gpus > 0 {
			g.Capacity["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
			g.Labels = map[string]string{"k8s.amazonaws.com/accelerator": "nvidia-a10g"}
			g.Taints = gpuTaint
		}
		return g
	}
	s.NodeGroups = []NodeGroup{
		group("cpu-16", "16", "64Gi", 0, 1200, 200, 0.77),
		group("cpu-32", "32", "128Gi", 0, 600, 0, 1.54),
		group("gpu-a10g-1", "4", "16Gi", 1, 200, 0, 1.006),
		group("gpu-a10g-4", "48", "192Gi", 4, 200, 20, 5.672),
	}
	tolerate := []v1.Toleration{{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	for i := 0; i < 24; i++ {
		s.Workloads = append(s.Workloads, hpaDeployment(fmt.Sprintf("web-%02d", i), "500m", "1Gi", 0, nil,
			200, 1300, time.Duration(i)*10*time.Minute, 60))
	}
	for i := 0; i < 4; i++ {
		s.Workloads = append(s.Workloads, hpaDeployment(fmt.Sprintf("infer-%d", i), "3", "12Gi", 1, tolerate,
			10, 150, time.Duration(i)*20*time.Minute, 60))
	}
	jobs := Workload{Name: "train", Pod: PodTemplate{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"),
		v1.ResourceMemory: resource.MustParse("32Gi"), "nvidia.com/gpu": resource.MustParse("1")}, Tolerations: tolerate}}
	for h := 8; h < 18; h++ {
		jobs.Jobs = append(jobs.Jobs, JobBatch{At: metav1.Duration{Duration: time.Duration(h) * time.Hour}, Count: 40,
			Duration: metav1.Duration{Duration: 90 * time.Minute}})
	}
	s.Workloads = append(s.Workloads, jobs)
	s.SetDefaults()
	s.SampleInterval = metav1.Duration{Duration: 5 * time.Minute}
	return s
}

// hpaDeployment is a Deployment whose HPA holds each pod near target%
// busy under a diurnal load (a new level every 10 minutes) that needs about
// min replicas at night and max at the peak.
func hpaDeployment(name, cpu, mem string, gpus int64, tol []v1.Toleration, minR, maxR int32, shift time.Duration, target int64) Workload {
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	if gpus > 0 {
		req["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	// Load in pods' worth of work at 100%: the HPA asks for load*100/target.
	low, high := float64(minR)*float64(target)/100, float64(maxR)*0.95*float64(target)/100
	var points []LoadPoint
	for m := 0; m <= 24*60; m += 10 {
		at := time.Duration(m) * time.Minute
		// Peak at 15:00 (plus shift), trough at 03:00.
		phase := 2 * math.Pi * (at - 15*time.Hour - shift).Hours() / 24
		v := low + (high-low)*(1+math.Cos(phase))/2
		points = append(points, LoadPoint{At: metav1.Duration{Duration: at}, Value: math.Round(v*10) / 10})
	}
	avg := resource.NewQuantity(target, resource.DecimalSI)
	return Workload{
		Name: name,
		Pod:  PodTemplate{Requests: req, Tolerations: tol},
		Deployment: &Deployment{
			Replicas:   int(minR),
			ReadyAfter: metav1.Duration{Duration: 30 * time.Second},
			HPA: &autoscalingv2.HorizontalPodAutoscalerSpec{
				MinReplicas: &minR, MaxReplicas: maxR,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "gpu_utilization"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: avg},
				}}},
			},
			Load: &LoadCurve{CapacityPerPod: 1, Interpolation: "step", Points: points},
		},
	}
}
