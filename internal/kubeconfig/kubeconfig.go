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

// Client is a loaded kubeconfig as kubectl loads it: the REST
// configuration and the namespace a command without -n works in.
type Client struct {
	Config *rest.Config
	// Namespace is the context's namespace, "default" when it names none,
	// or the pod's own namespace in a cluster.
	Namespace string
}

// Load loads --kubeconfig and --context with kubectl's rules: the file at
// path, else $KUBECONFIG, else ~/.kube/config, else the in-cluster
// configuration; context, when set, picks the kubeconfig context.
func Load(path, context string) (Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return Client{}, fmt.Errorf("%s: %w", describe(path, context), err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return Client{}, fmt.Errorf("%s: namespace: %w", describe(path, context), err)
	}
	return Client{Config: cfg, Namespace: ns}, nil
}

func describe(path, context string) string {
	s := fmt.Sprintf("--kubeconfig %q", path)
	if context != "" {
		s += fmt.Sprintf(" --context %q", context)
	}
	return s
}
