// Package examples embeds the example files users copy, so that the demo
// and the tests use the very same text.
package examples

import _ "embed"

// GPUUtilizationAdapterValues is the GPU HPA guide's prometheus-adapter
// Helm values (metrics-adapter/gpu-utilization-values.yaml), verbatim: it
// maps DCGM_FI_DEV_GPU_UTIL to the pods metric gpu_utilization.
//
//go:embed metrics-adapter/gpu-utilization-values.yaml
var GPUUtilizationAdapterValues string

// VLLMAdapterValues maps vLLM's metrics (waiting and running requests,
// KV-cache use, time to first token) to custom metrics per pod and external
// metrics per model (metrics-adapter/vllm-values.yaml).
//
//go:embed metrics-adapter/vllm-values.yaml
var VLLMAdapterValues string
