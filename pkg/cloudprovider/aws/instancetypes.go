package aws

import (
	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/gpu"
)

// InstanceType is what the provider knows of an EC2 instance type without
// calling ec2:DescribeInstanceTypes (which the documented IAM policy does
// not grant).
type InstanceType struct {
	VCPU      int64
	MemoryMiB int64
	// GPUs is the number of accelerators (GPUs, Inferentia or Trainium
	// chips, Gaudi cards), advertised as Resource; Cores the NeuronCores
	// of Neuron types, advertised as aws.amazon.com/neuroncore too.
	GPUs     int64
	Resource v1.ResourceName
	Cores    int64
	// Accelerator is the k8s.amazonaws.com/accelerator label value of
	// accelerator types ("" for CPU types).
	Accelerator string
	// Arch is the kubernetes.io/arch value.
	Arch string
	// PricePerHour is the on-demand Linux price in us-east-1, in dollars.
	PricePerHour float64
}

// Accelerator label values, as EKS users set them with
// --node-labels k8s.amazonaws.com/accelerator=... on GPU nodes.
const (
	AcceleratorT4      = "nvidia-tesla-t4"
	AcceleratorA10G    = "nvidia-a10g"
	AcceleratorL4      = "nvidia-l4"
	AcceleratorL40S    = "nvidia-l40s"
	AcceleratorV100    = "nvidia-tesla-v100"
	AcceleratorA100    = "nvidia-a100"
	AcceleratorA100_80 = "nvidia-a100-80gb"
	AcceleratorH100    = "nvidia-h100"
	AcceleratorH200    = "nvidia-h200"
	AcceleratorB200    = "nvidia-b200"
	// Not GPUs, but accelerators all the same: the label marks their nodes
	// before the device plugin advertises anything.
	AcceleratorInferentia  = "aws-inferentia"
	AcceleratorInferentia2 = "aws-inferentia2"
	AcceleratorTrainium    = "aws-trainium"
	AcceleratorTrainium2   = "aws-trainium2"
	AcceleratorRadeonV520  = "amd-radeon-pro-v520"
	AcceleratorGaudi       = "habana-gaudi"
)

// LookupInstanceType returns the table entry of an instance type.
func LookupInstanceType(name string) (InstanceType, bool) {
	t, ok := instanceTypes[name]
	return t, ok
}

// InstanceTypeNames lists the table, for documentation and tests.
func InstanceTypeNames() []string {
	out := make([]string, 0, len(instanceTypes))
	for name := range instanceTypes {
		out = append(out, name)
	}
	return out
}

func cpu(vcpu, memGiB int64, price float64) InstanceType {
	return InstanceType{VCPU: vcpu, MemoryMiB: memGiB * 1024, Arch: "amd64", PricePerHour: price}
}

func arm(vcpu, memGiB int64, price float64) InstanceType {
	t := cpu(vcpu, memGiB, price)
	t.Arch = "arm64"
	return t
}

func accel(vcpu, memGiB, gpus int64, accelerator string, price float64) InstanceType {
	t := cpu(vcpu, memGiB, price)
	t.GPUs, t.Resource, t.Accelerator = gpus, gpu.ResourceName, accelerator
	return t
}

// neuron is an Inferentia or Trainium type: devices and their NeuronCores.
func neuron(vcpu, memGiB, devices, cores int64, accelerator string, price float64) InstanceType {
	t := cpu(vcpu, memGiB, price)
	t.GPUs, t.Resource, t.Cores, t.Accelerator = devices, gpu.ResourceNeuron, cores, accelerator
	return t
}

// other is an accelerator type advertised under its own resource.
func other(vcpu, memGiB, devices int64, res v1.ResourceName, accelerator string, price float64) InstanceType {
	t := cpu(vcpu, memGiB, price)
	t.GPUs, t.Resource, t.Accelerator = devices, res, accelerator
	return t
}

// instanceTypes is kept by hand. Source: the Amazon EC2 instance type
// specifications (docs.aws.amazon.com/ec2/latest/instancetypes: vCPUs,
// memory, accelerators; "Accelerated computing" for GPU, Inferentia,
// Trainium and Gaudi counts) and the EC2 On-Demand pricing page for US East
// (N. Virginia), Linux. Prices of P4d and P5 are the list prices before
// AWS's June 2025 reduction for those families, those of P5en, P6-B200 and
// Trn2 the list prices after it (P5e is sold in capacity blocks only and
// is left out). The cloud configuration's prices override any entry
// (docs/cloudprovider-aws.md). NeuronCores per device are the Neuron
// documentation's: 4 on Inferentia, 2 on Inferentia2 and Trainium, and 4
// logical cores on Trainium2 at its default logical NeuronCore size of 2.
var instanceTypes = map[string]InstanceType{
	// General purpose, Intel Xeon (Skylake/Cascade Lake, Ice Lake, Sapphire Rapids).
	"m5.large": cpu(2, 8, 0.096), "m5.xlarge": cpu(4, 16, 0.192), "m5.2xlarge": cpu(8, 32, 0.384),
	"m5.4xlarge": cpu(16, 64, 0.768), "m5.8xlarge": cpu(32, 128, 1.536), "m5.12xlarge": cpu(48, 192, 2.304),
	"m5.16xlarge": cpu(64, 256, 3.072), "m5.24xlarge": cpu(96, 384, 4.608), "m5.metal": cpu(96, 384, 4.608),

	"m6i.large": cpu(2, 8, 0.096), "m6i.xlarge": cpu(4, 16, 0.192), "m6i.2xlarge": cpu(8, 32, 0.384),
	"m6i.4xlarge": cpu(16, 64, 0.768), "m6i.8xlarge": cpu(32, 128, 1.536), "m6i.12xlarge": cpu(48, 192, 2.304),
	"m6i.16xlarge": cpu(64, 256, 3.072), "m6i.24xlarge": cpu(96, 384, 4.608), "m6i.32xlarge": cpu(128, 512, 6.144),

	"m7i.large": cpu(2, 8, 0.1008), "m7i.xlarge": cpu(4, 16, 0.2016), "m7i.2xlarge": cpu(8, 32, 0.4032),
	"m7i.4xlarge": cpu(16, 64, 0.8064), "m7i.8xlarge": cpu(32, 128, 1.6128), "m7i.12xlarge": cpu(48, 192, 2.4192),
	"m7i.16xlarge": cpu(64, 256, 3.2256), "m7i.24xlarge": cpu(96, 384, 4.8384), "m7i.48xlarge": cpu(192, 768, 9.6768),

	// General purpose, AWS Graviton2 (arm64).
	"m6g.large": arm(2, 8, 0.077), "m6g.xlarge": arm(4, 16, 0.154), "m6g.2xlarge": arm(8, 32, 0.308),
	"m6g.4xlarge": arm(16, 64, 0.616), "m6g.8xlarge": arm(32, 128, 1.232), "m6g.12xlarge": arm(48, 192, 1.848),
	"m6g.16xlarge": arm(64, 256, 2.464),

	// Burstable.
	"t3.medium": cpu(2, 4, 0.0416), "t3.large": cpu(2, 8, 0.0832), "t3.xlarge": cpu(4, 16, 0.1664),
	"t3.2xlarge": cpu(8, 32, 0.3328),

	// Compute optimised.
	"c5.large": cpu(2, 4, 0.085), "c5.xlarge": cpu(4, 8, 0.17), "c5.2xlarge": cpu(8, 16, 0.34),
	"c5.4xlarge": cpu(16, 32, 0.68), "c5.9xlarge": cpu(36, 72, 1.53), "c5.12xlarge": cpu(48, 96, 2.04),
	"c5.18xlarge": cpu(72, 144, 3.06), "c5.24xlarge": cpu(96, 192, 4.08),

	"c6i.large": cpu(2, 4, 0.085), "c6i.xlarge": cpu(4, 8, 0.17), "c6i.2xlarge": cpu(8, 16, 0.34),
	"c6i.4xlarge": cpu(16, 32, 0.68), "c6i.8xlarge": cpu(32, 64, 1.36), "c6i.12xlarge": cpu(48, 96, 2.04),
	"c6i.16xlarge": cpu(64, 128, 2.72), "c6i.24xlarge": cpu(96, 192, 4.08), "c6i.32xlarge": cpu(128, 256, 5.44),

	"c7i.large": cpu(2, 4, 0.08925), "c7i.xlarge": cpu(4, 8, 0.1785), "c7i.2xlarge": cpu(8, 16, 0.357),
	"c7i.4xlarge": cpu(16, 32, 0.714), "c7i.8xlarge": cpu(32, 64, 1.428), "c7i.12xlarge": cpu(48, 96, 2.142),
	"c7i.16xlarge": cpu(64, 128, 2.856), "c7i.24xlarge": cpu(96, 192, 4.284), "c7i.48xlarge": cpu(192, 384, 8.568),

	// Memory optimised.
	"r5.large": cpu(2, 16, 0.126), "r5.xlarge": cpu(4, 32, 0.252), "r5.2xlarge": cpu(8, 64, 0.504),
	"r5.4xlarge": cpu(16, 128, 1.008), "r5.8xlarge": cpu(32, 256, 2.016), "r5.12xlarge": cpu(48, 384, 3.024),
	"r5.16xlarge": cpu(64, 512, 4.032), "r5.24xlarge": cpu(96, 768, 6.048),

	"r6i.large": cpu(2, 16, 0.126), "r6i.xlarge": cpu(4, 32, 0.252), "r6i.2xlarge": cpu(8, 64, 0.504),
	"r6i.4xlarge": cpu(16, 128, 1.008), "r6i.8xlarge": cpu(32, 256, 2.016), "r6i.12xlarge": cpu(48, 384, 3.024),
	"r6i.16xlarge": cpu(64, 512, 4.032), "r6i.24xlarge": cpu(96, 768, 6.048), "r6i.32xlarge": cpu(128, 1024, 8.064),

	// NVIDIA T4.
	"g4dn.xlarge":   accel(4, 16, 1, AcceleratorT4, 0.526),
	"g4dn.2xlarge":  accel(8, 32, 1, AcceleratorT4, 0.752),
	"g4dn.4xlarge":  accel(16, 64, 1, AcceleratorT4, 1.204),
	"g4dn.8xlarge":  accel(32, 128, 1, AcceleratorT4, 2.176),
	"g4dn.12xlarge": accel(48, 192, 4, AcceleratorT4, 3.912),
	"g4dn.16xlarge": accel(64, 256, 1, AcceleratorT4, 4.352),
	"g4dn.metal":    accel(96, 384, 8, AcceleratorT4, 7.824),

	// NVIDIA A10G.
	"g5.xlarge":   accel(4, 16, 1, AcceleratorA10G, 1.006),
	"g5.2xlarge":  accel(8, 32, 1, AcceleratorA10G, 1.212),
	"g5.4xlarge":  accel(16, 64, 1, AcceleratorA10G, 1.624),
	"g5.8xlarge":  accel(32, 128, 1, AcceleratorA10G, 2.448),
	"g5.12xlarge": accel(48, 192, 4, AcceleratorA10G, 5.672),
	"g5.16xlarge": accel(64, 256, 1, AcceleratorA10G, 4.096),
	"g5.24xlarge": accel(96, 384, 4, AcceleratorA10G, 8.144),
	"g5.48xlarge": accel(192, 768, 8, AcceleratorA10G, 16.288),

	// NVIDIA L4.
	"g6.xlarge":   accel(4, 16, 1, AcceleratorL4, 0.8048),
	"g6.2xlarge":  accel(8, 32, 1, AcceleratorL4, 0.9776),
	"g6.4xlarge":  accel(16, 64, 1, AcceleratorL4, 1.3232),
	"g6.8xlarge":  accel(32, 128, 1, AcceleratorL4, 2.0144),
	"g6.12xlarge": accel(48, 192, 4, AcceleratorL4, 4.6016),
	"g6.16xlarge": accel(64, 256, 1, AcceleratorL4, 3.3968),
	"g6.24xlarge": accel(96, 384, 4, AcceleratorL4, 6.6752),
	"g6.48xlarge": accel(192, 768, 8, AcceleratorL4, 13.3504),

	// NVIDIA L40S.
	"g6e.xlarge":   accel(4, 32, 1, AcceleratorL40S, 1.861),
	"g6e.2xlarge":  accel(8, 64, 1, AcceleratorL40S, 2.242),
	"g6e.4xlarge":  accel(16, 128, 1, AcceleratorL40S, 3.004),
	"g6e.8xlarge":  accel(32, 256, 1, AcceleratorL40S, 4.529),
	"g6e.12xlarge": accel(48, 384, 4, AcceleratorL40S, 10.493),
	"g6e.16xlarge": accel(64, 512, 1, AcceleratorL40S, 7.577),
	"g6e.24xlarge": accel(96, 768, 4, AcceleratorL40S, 15.066),
	"g6e.48xlarge": accel(192, 1536, 8, AcceleratorL40S, 30.131),

	// NVIDIA V100 (p3.2xlarge has 61 GiB of memory, not a power of two).
	"p3.2xlarge":    accel(8, 61, 1, AcceleratorV100, 3.06),
	"p3.8xlarge":    accel(32, 244, 4, AcceleratorV100, 12.24),
	"p3.16xlarge":   accel(64, 488, 8, AcceleratorV100, 24.48),
	"p3dn.24xlarge": accel(96, 768, 8, AcceleratorV100, 31.212),

	// NVIDIA A100 (40 GB and 80 GB), H100, H200 and B200.
	"p4d.24xlarge":     accel(96, 1152, 8, AcceleratorA100, 32.7726),
	"p4de.24xlarge":    accel(96, 1152, 8, AcceleratorA100_80, 40.9657),
	"p5.48xlarge":      accel(192, 2048, 8, AcceleratorH100, 98.32),
	"p5en.48xlarge":    accel(192, 2048, 8, AcceleratorH200, 63.296),
	"p6-b200.48xlarge": accel(192, 2048, 8, AcceleratorB200, 113.9328),

	// AWS Inferentia (4 NeuronCores per chip) and Inferentia2 (2).
	"inf1.xlarge":   neuron(4, 8, 1, 4, AcceleratorInferentia, 0.228),
	"inf1.2xlarge":  neuron(8, 16, 1, 4, AcceleratorInferentia, 0.362),
	"inf1.6xlarge":  neuron(24, 48, 4, 16, AcceleratorInferentia, 1.18),
	"inf1.24xlarge": neuron(96, 192, 16, 64, AcceleratorInferentia, 4.721),
	"inf2.xlarge":   neuron(4, 16, 1, 2, AcceleratorInferentia2, 0.7582),
	"inf2.8xlarge":  neuron(32, 128, 1, 2, AcceleratorInferentia2, 1.9679),
	"inf2.24xlarge": neuron(96, 384, 6, 12, AcceleratorInferentia2, 6.4906),
	"inf2.48xlarge": neuron(192, 768, 12, 24, AcceleratorInferentia2, 12.9813),

	// AWS Trainium (2 NeuronCores per chip) and Trainium2.
	"trn1.2xlarge":   neuron(8, 32, 1, 2, AcceleratorTrainium, 1.3438),
	"trn1.32xlarge":  neuron(128, 512, 16, 32, AcceleratorTrainium, 21.50),
	"trn1n.32xlarge": neuron(128, 512, 16, 32, AcceleratorTrainium, 24.78),
	"trn2.48xlarge":  neuron(192, 2048, 16, 64, AcceleratorTrainium2, 35.7608),

	// AMD Radeon Pro V520.
	"g4ad.xlarge":   other(4, 16, 1, gpu.ResourceAMD, AcceleratorRadeonV520, 0.3785),
	"g4ad.2xlarge":  other(8, 32, 1, gpu.ResourceAMD, AcceleratorRadeonV520, 0.5412),
	"g4ad.4xlarge":  other(16, 64, 1, gpu.ResourceAMD, AcceleratorRadeonV520, 0.867),
	"g4ad.8xlarge":  other(32, 128, 2, gpu.ResourceAMD, AcceleratorRadeonV520, 1.734),
	"g4ad.16xlarge": other(64, 256, 4, gpu.ResourceAMD, AcceleratorRadeonV520, 3.468),

	// Habana (Intel) Gaudi.
	"dl1.24xlarge": other(96, 768, 8, gpu.ResourceGaudi, AcceleratorGaudi, 13.1090),
}
