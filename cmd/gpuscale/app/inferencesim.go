package app

import (
	"github.com/spf13/cobra"

	"github.com/gpuscale/gpuscale/internal/run"
)

func newInferenceSimCommand() *cobra.Command {
	opts := run.NewInferenceSimOptions()
	cmd := &cobra.Command{
		Use:   "inference-sim",
		Short: "Serve vLLM's request, KV-cache and time-to-first-token metrics for the pods of each model, with a simulated request load",
		Long: `A stand-in for vLLM inference servers on clusters without GPUs (kwok nodes,
tests, demos). Pods labelled inference.gpuscale.dev/model=<model> serve that
model; for each Ready one, /metrics carries vllm:num_requests_running,
vllm:num_requests_waiting, vllm:kv_cache_usage_perc and the
vllm:time_to_first_token_seconds histogram (labels namespace,
pod, model_name: scrape with honor_labels). A model's requests are spread
over its Ready pods, up to --slots-per-pod running on each, the rest
waiting; with no Ready pod they wait at the router (a series without pod).
A request's time to first token is --prefill-duration after the requests
queued ahead of it on its server, which frees --slots-per-pod slots every
--request-duration.

Set a model's load over HTTP on the control address (loopback by default):
PUT /load/{namespace}/{model} with {"requests": 12}. See docs/inference.md.`,
		Example: `  gpuscale inference-sim --kubeconfig ~/.kube/config
  curl -X PUT localhost:9403/load/default/llama-3-8b -d '{"requests":12}'
  curl localhost:9402/metrics | grep vllm:num_requests_waiting`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			return run.InferenceSim(cmd.Context(), opts)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}
