package app

import (
	goflag "flag"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter"
)

func newMetricsAdapterCommand() *cobra.Command {
	opts := metricsadapter.NewOptions()
	cmd := &cobra.Command{
		Use:   "metrics-adapter",
		Short: "Serve custom and external metrics from Prometheus to the HPA (prometheus-adapter rules)",
		Long: `Serves custom.metrics.k8s.io (v1beta1, v1beta2) and external.metrics.k8s.io
(v1beta1) as an aggregated API, computing values with Prometheus queries.
Reads prometheus-adapter's rule configuration unchanged, or the
prometheus-adapter Helm chart's values file. A metric whose series appear
after start is served on first request, values keep their samples'
timestamps, and ambiguous or NaN results are reported instead of guessed.
See docs/metrics-adapter.md.`,
		Example: `  # in the cluster, with the chart's values file
  gpuscale metrics-adapter --config=/etc/adapter/values.yaml --secure-port=6443 --cert-dir=/tmp/certs

  # on a workstation, against a local cluster and Prometheus
  gpuscale metrics-adapter --secure-port=6443 --cert-dir=/tmp/adapter \
    --lister-kubeconfig=kubeconfig --authentication-kubeconfig=kubeconfig --authorization-kubeconfig=kubeconfig \
    --prometheus-url=http://127.0.0.1:9090 --config=adapter.yaml --metrics-relist-interval=5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return metricsadapter.Run(ctx, opts)
		},
	}
	opts.AddFlags(cmd.Flags())
	addKlogFlags(cmd.Flags())
	return cmd
}

// addKlogFlags exposes klog's verbosity, which the embedded API server logs
// through.
func addKlogFlags(fs *pflag.FlagSet) {
	gfs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(gfs)
	for _, name := range []string{"v", "vmodule"} {
		if fs.Lookup(name) == nil {
			fs.AddGoFlag(gfs.Lookup(name))
		}
	}
}
