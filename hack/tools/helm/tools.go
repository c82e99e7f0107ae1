//go:build tools

// Package tools pins the helm CLI, which the chart test (test/chart) runs for
// `helm lint` and `helm template`. It lives in its own module because helm
// brings its own k8s.io staging versions, independent of the other tool
// modules and of the main module.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
