// Package run wires the command line to the live controller: it builds the
// Kubernetes client, the cloud provider and the controller from validated
// flags.
package run

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/cmd/gpuscale/app"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/pkg/controller"
	"github.com/gpuscale/gpuscale/pkg/expander"
)

// ClusterAutoscaler runs `gpuscale cluster-autoscaler` until ctx ends.
func ClusterAutoscaler(ctx context.Context, cfg *app.ClusterAutoscalerConfig) error {
	auto, err := cfg.Options()
	if err != nil {
		return err
	}
	shell, err := cfg.Shell()
	if err != nil {
		return err
	}
	restCfg, err := app.RESTConfig(shell.Kubeconfig)
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
	o := controller.DefaultOptions()
	o.Autoscaler = auto
	o.ScanInterval = shell.ScanInterval
	o.Namespace = shell.Namespace
	o.StatusConfigMapName = shell.StatusConfigMapName
	o.WriteStatusConfigMap = shell.WriteStatusConfigMap
	o.MaxPodEvictionTime = shell.MaxPodEvictionTime
	o.Address = shell.Address
	le := shell.LeaderElection
	o.LeaderElection = controller.LeaderElection{Enabled: le.Enabled, Namespace: le.Namespace, Name: le.Name,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod}
	o.Logger = logger
	c, err := controller.New(client, cp, o)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

func newCloudProvider(ctx context.Context, client kubernetes.Interface, shell app.ShellOptions, logger *slog.Logger) (cloudprovider.CloudProvider, error) {
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
