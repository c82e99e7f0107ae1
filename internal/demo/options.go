// Package demo plays the GPU autoscaling walkthrough on a local control
// plane: a GPU Deployment, the HPA on DCGM_FI_DEV_GPU_UTIL through
// Prometheus and the metrics adapter, and the node autoscaler adding and
// removing a kwok GPU node. `gpuscale demo` runs it.
//
// The components are real: etcd, kube-apiserver, kube-scheduler and
// kube-controller-manager (whose HPA controller does the pod autoscaling)
// from internal/localcluster, a real Prometheus, and the gpuscale binary's
// own commands as child processes: dcgm-sim (the GPU metrics, with load
// set by a pod annotation), metrics-adapter (registered as the
// custom.metrics.k8s.io APIService) and cluster-autoscaler (the kwok
// provider, whose GPU nodes advertise their GPUs after a device-plugin
// delay).
package demo

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gpuscale/gpuscale/internal/localcluster"
)

// Step names a point of the walkthrough; Options.AfterStep is called with
// each once it has happened.
type Step string

// The walkthrough's steps, in order.
const (
	// StepDeployed: gpu-hpa-test runs its one pod on a GPU node the
	// autoscaler added for it.
	StepDeployed Step = "deployed"
	// StepMetricServed: the custom metrics API serves gpu_utilization for the pod.
	StepMetricServed Step = "metric-served"
	// StepHPAApplied: the HPA reads the metric (TARGETS 0/30).
	StepHPAApplied Step = "hpa-applied"
	// StepScaledOut: under load 100 the HPA asked for 2 replicas and the
	// second pod was Pending for want of a GPU.
	StepScaledOut Step = "scaled-out"
	// StepNodeAdded: the autoscaler added one GPU node, the second pod
	// runs there, and the HPA reads 50/30.
	StepNodeAdded Step = "node-added"
	// StepScaledIn: with the load at 0 the HPA went back to 1 replica.
	StepScaledIn Step = "scaled-in"
	// StepNodeRemoved: the autoscaler removed the idle GPU node.
	StepNodeRemoved Step = "node-removed"
)

// Story names a walkthrough.
type Story string

// The walkthroughs.
const (
	// StoryGPU is the seed's: an HPA on GPU utilization, a GPU node added
	// and removed.
	StoryGPU Story = "gpu"
	// StoryInference is an inference server scaled from and to zero on its
	// requests, with warm capacity held by a CapacityBuffer (inference.go).
	StoryInference Story = "inference"
)

// Steps returns the steps of the seed's walkthrough in the order they happen.
func Steps() []Step {
	return []Step{StepDeployed, StepMetricServed, StepHPAApplied, StepScaledOut, StepNodeAdded, StepScaledIn, StepNodeRemoved}
}

// Options configure Run. Defaults and Quick return complete sets.
type Options struct {
	// Story is the walkthrough played (default StoryGPU).
	Story Story
	// Out receives the walkthrough: progress, the HPA table, node events.
	Out io.Writer
	// Binary is the gpuscale executable run for dcgm-sim, metrics-adapter
	// and cluster-autoscaler (default: this process's executable).
	Binary string
	// BinDir holds the control-plane binaries and Prometheus; empty builds
	// or reuses them with hack/build-tools.sh (localcluster.EnsureTools).
	BinDir string
	// Workdir holds the cluster, the logs and the generated configuration
	// (default $TMPDIR/gpuscale-demo).
	Workdir string
	// Keep leaves everything running when the walkthrough ends, for
	// poking around with the printed kubeconfig.
	Keep bool

	// ScrapeInterval is Prometheus's scrape interval; MetricsRelistInterval
	// the adapter's --metrics-relist-interval.
	ScrapeInterval        time.Duration
	MetricsRelistInterval time.Duration
	// DownscaleStabilization is kube-controller-manager's
	// --horizontal-pod-autoscaler-downscale-stabilization (upstream 5m).
	DownscaleStabilization time.Duration
	// ScanInterval, UnneededTime and DelayAfterAdd are the autoscaler's
	// --scan-interval, --scale-down-unneeded-time and
	// --scale-down-delay-after-add (upstream 10s, 10m, 10m).
	ScanInterval  time.Duration
	UnneededTime  time.Duration
	DelayAfterAdd time.Duration
	// ProvisioningDelay and DevicePluginDelay are the kwok GPU group's: how
	// long a new node takes to appear, and then to advertise its GPU.
	ProvisioningDelay time.Duration
	DevicePluginDelay time.Duration
	// MaxGPUNodes is the GPU group's maxSize (default 2). The walkthrough
	// needs 2; a larger one shows that the autoscaler orders no duplicate
	// node while the new node's device plugin starts. The inference story
	// needs 4 (3 replicas and a warm node) and raises a smaller one to 4.
	MaxGPUNodes int
	// StepTimeout bounds each step of the walkthrough.
	StepTimeout time.Duration

	// AfterStep, when set, is called after each step with the running
	// cluster; an error ends the walkthrough. Tests check the cluster here.
	AfterStep func(Step, *localcluster.Cluster) error
}

// Defaults are the timings of `gpuscale demo`: shortened from upstream's
// defaults so the walkthrough takes a few minutes, still slow enough to
// watch.
func Defaults() Options {
	return Options{
		ScrapeInterval:         5 * time.Second,
		MetricsRelistInterval:  30 * time.Second,
		DownscaleStabilization: time.Minute,
		ScanInterval:           5 * time.Second,
		UnneededTime:           30 * time.Second,
		DelayAfterAdd:          0,
		ProvisioningDelay:      5 * time.Second,
		DevicePluginDelay:      20 * time.Second,
		MaxGPUNodes:            2,
		StepTimeout:            5 * time.Minute,
	}
}

// Quick are the timings of `gpuscale demo --quick`, used by the tests.
func Quick() Options {
	return Options{
		ScrapeInterval:         time.Second,
		MetricsRelistInterval:  5 * time.Second,
		DownscaleStabilization: 10 * time.Second,
		ScanInterval:           time.Second,
		UnneededTime:           5 * time.Second,
		DelayAfterAdd:          0,
		ProvisioningDelay:      time.Second,
		DevicePluginDelay:      3 * time.Second,
		MaxGPUNodes:            2,
		StepTimeout:            3 * time.Minute,
	}
}

// Validate names the first option out of range.
func (o *Options) Validate() error {
	var errs []error
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("demo: %s must be positive, got %s", name, d))
		}
	}
	notNegative := func(name string, d time.Duration) {
		if d < 0 {
			errs = append(errs, fmt.Errorf("demo: %s must not be negative, got %s", name, d))
		}
	}
	positive("ScrapeInterval", o.ScrapeInterval)
	positive("MetricsRelistInterval", o.MetricsRelistInterval)
	positive("DownscaleStabilization", o.DownscaleStabilization)
	positive("ScanInterval", o.ScanInterval)
	positive("UnneededTime", o.UnneededTime)
	positive("StepTimeout", o.StepTimeout)
	notNegative("DelayAfterAdd", o.DelayAfterAdd)
	notNegative("ProvisioningDelay", o.ProvisioningDelay)
	notNegative("DevicePluginDelay", o.DevicePluginDelay)
	switch o.Story {
	case "", StoryGPU, StoryInference:
	default:
		errs = append(errs, fmt.Errorf("demo: the story (--story) must be %q or %q, got %q", StoryGPU, StoryInference, o.Story))
	}
	if o.MaxGPUNodes < 2 {
		errs = append(errs, fmt.Errorf("demo: MaxGPUNodes must be at least 2 (the walkthrough runs 2 GPU pods), got %d", o.MaxGPUNodes))
	}
	return errors.Join(errs...)
}
