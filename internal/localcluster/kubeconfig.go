package localcluster

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// loadKubeconfig builds an admin client configuration from the kubeconfig
// kwokctl wrote, with room for the bursts of tests and the demo.
func loadKubeconfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "gpuscale-localcluster"
	return cfg, nil
}
