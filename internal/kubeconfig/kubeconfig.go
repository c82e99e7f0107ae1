// Package kubeconfig loads the --kubeconfig every command takes.
package kubeconfig

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig loads --kubeconfig: the file at path, or the in-cluster
// configuration when path is empty and the process runs in a pod, or the
// default kubeconfig ($KUBECONFIG, ~/.kube/config).
func RESTConfig(path string) (*rest.Config, error) {
	if path == "" {
		if c, err := rest.InClusterConfig(); err == nil {
			return c, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %q: %w", path, err)
	}
	return c, nil
}
