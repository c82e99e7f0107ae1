package demo

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/yaml"
)

// The objects of the walkthrough.
const (
	namespace  = "default"
	appName    = "gpu-hpa-test"
	metricName = "gpu_utilization"
	gpuGroup   = "gpu-a10g"
	adapterNS  = "monitoring"
)

// deploymentYAML is the GPU guide's test workload, as written there.
const deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gpu-hpa-test
spec:
  replicas: 1
  selector:
    matchLabels:
      app: gpu-hpa-test
  template:
    metadata:
      labels:
        app: gpu-hpa-test
    spec:
      containers:
      - name: cuda-test
        image: nvcr.io/nvidia/cuda:13.0.1-base-ubi9
        command: ["/bin/sh", "-c"]
        args:
        - nvidia-smi && sleep 3600
        resources:
          limits:
            nvidia.com/gpu: 1
      tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
`

// hpaYAML is the guide's HPA: average gpu_utilization 30, 1 to 2 replicas.
const hpaYAML = `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: gpu-hpa-test
  namespace: default
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: gpu-hpa-test
  minReplicas: 1
  maxReplicas: 2
  metrics:
  - type: Pods
    pods:
      metric:
        name: gpu_utilization
      target:
        type: AverageValue
        averageValue: 30
`

// kwokConfig is the node autoscaler's kwok provider configuration: one GPU
// group, min 1, max 2 (Options.MaxGPUNodes), whose nodes look like EKS
// g5.xlarge nodes.
const kwokConfig = `provisioningDelay: %s
devicePluginDelay: %s
nodeGroups:
- name: gpu-a10g
  minSize: %d
  maxSize: %d
  instanceType: g5.xlarge
  pricePerHour: 1.006
  zone: us-east-1a
  template:
    labels: {k8s.amazonaws.com/accelerator: nvidia-a10g}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    capacity: {cpu: "4", memory: 16Gi, pods: "110", nvidia.com/gpu: "1"}
`

func seedDeployment() (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict([]byte(deploymentYAML), d); err != nil {
		return nil, fmt.Errorf("demo: the gpu-hpa-test Deployment: %w", err)
	}
	d.Namespace = namespace
	return d, nil
}

func seedHPA() (*autoscalingv2.HorizontalPodAutoscaler, error) {
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := yaml.UnmarshalStrict([]byte(hpaYAML), h); err != nil {
		return nil, fmt.Errorf("demo: the gpu-hpa-test HPA: %w", err)
	}
	return h, nil
}

func renderKwokConfig(provisioning, devicePlugin time.Duration, minNodes, maxNodes int) string {
	return fmt.Sprintf(kwokConfig, provisioning, devicePlugin, minNodes, maxNodes)
}
