//go:build tools

// Package tools pins the Prometheus server. It is a separate module because
// Prometheus requires k8s.io/client-go v0.37 and a much newer gRPC/OTel set
// than k8s.io/kubernetes v1.35.4 (hack/tools) can be built with.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
)
