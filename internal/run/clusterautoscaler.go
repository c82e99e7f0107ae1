// Package run wires the command line to what runs against a live cluster:
// it owns `gpuscale cluster-autoscaler`'s options (the decision flags every
// shell shares, and the live shell's own) and builds the Kubernetes client,
// the cloud provider and the controller from them; likewise the options and
// the running of `gpuscale explain` and `gpuscale dcgm-sim`. The command
// tree (cmd/gpuscale/app) only names the commands, their help and their
// arguments.
package run

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuscale/gpuscale/internal/kubeconfig"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/controller"
	"github.com/gpuscale/gpuscale/pkg/expander"
)

// restConfig loads --kubeconfig and sets the client's rate
// (--kube-client-qps, --kube-client-burst).
func (s *ShellOptions) restConfig() (*rest.Config, error) {
	c, err := kubeconfig.RESTConfig(s.Kubeconfig)
	if err != nil {
		return nil, err
	}
	c.QPS, c.Burst = float32(s.KubeClientQPS), s.KubeClientBurst
	return c, nil
}

// ClusterAutoscaler runs `gpuscale cluster-autoscaler` with validated
// options until ctx ends.
func ClusterAutoscaler(ctx context.Context, o *ClusterAutoscalerOptions) error {
	shell, decision := o.Shell, o.Decision.Decision
	auto := decision.Autoscaler
	restCfg, err := shell.restConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	// The command line set the process's logger up (--log-format, --v).
	logger := slog.Default()
	if strings.Contains(auto.ScaleUp.Expander, "priority") {
		cm, err := client.CoreV1().ConfigMaps(shell.Namespace).Get(ctx, expander.PriorityConfigMapName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("--expander=%s: reading ConfigMap %s/%s: %w", auto.ScaleUp.Expander, shell.Namespace, expander.PriorityConfigMapName, err)
		}
		if auto.ScaleUp.Priorities, err = controller.PriorityConfigMap(cm); err != nil {
			return err
		}
	}
	cp, err := newCloudProvider(ctx, client, shell, logger)
	if err != nil {
		return err
	}
	copts := controllerOptions(shell, decision.ScanInterval, auto, logger)
	if auto.ProvisioningRequests.Enabled || auto.CapacityBuffers.Enabled() {
		if copts.Dynamic, err = dynamic.NewForConfig(restCfg); err != nil {
			return fmt.Errorf("--kubeconfig: %w", err)
		}
	}
	c, err := controller.New(client, cp, copts)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

func newCloudProvider(ctx context.Context, client kubernetes.Interface, shell ShellOptions, logger *slog.Logger) (cloudprovider.CloudProvider, error) {
	switch shell.CloudProvider {
	case kwok.ProviderName:
		cfg, err := kwok.LoadConfig(ctx, client, shell.Namespace, shell.CloudConfig)
		if err != nil {
			return nil, err
		}
		return kwok.New(kwok.Options{Client: client, Config: cfg, Namespace: shell.Namespace, Logger: logger})
	case "aws":
		return newAWSProvider(ctx, shell, logger)
	case "gce":
		return newGCEProvider(ctx, shell, logger)
	default:
		return nil, fmt.Errorf("--cloud-provider: unknown provider %q (known: aws, gce, %s)", shell.CloudProvider, kwok.ProviderName)
	}
}
