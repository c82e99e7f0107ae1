//go:build tools

// Package tools pins the Prometheus server. It is a separate module because
// Prometheus carries its own client-go and gRPC/OTel set, apart from the one
// k8s.io/kubernetes v1.37.2 (hack/tools) is built with.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
)
