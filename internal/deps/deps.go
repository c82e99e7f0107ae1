//go:build tools

// Package deps pins libraries that packages under construction will use,
// so that go mod tidy keeps them.
package deps

import (
	_ "github.com/aws/aws-sdk-go-v2/aws/retry"
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/service/autoscaling"
	_ "github.com/aws/aws-sdk-go-v2/service/ec2"
	_ "github.com/go-echarts/go-echarts/v2/charts"
	_ "github.com/go-echarts/go-echarts/v2/components"
	_ "github.com/prometheus/client_golang/api/prometheus/v1"
	_ "github.com/schollz/progressbar/v3"
	_ "gonum.org/v1/gonum/optimize/convex/lp"
	_ "google.golang.org/api/compute/v1"
	_ "google.golang.org/api/option"
	_ "k8s.io/metrics/pkg/apis/custom_metrics"
	_ "k8s.io/metrics/pkg/apis/external_metrics"
	_ "sigs.k8s.io/custom-metrics-apiserver/pkg/cmd"
	_ "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
	_ "sigs.k8s.io/custom-metrics-apiserver/pkg/provider/helpers"
)
