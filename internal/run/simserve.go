package run

import (
	"fmt"
	"net"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuscale/gpuscale/internal/kubeconfig"
)

// checkAddresses names each of the stand-ins' addresses that is not
// [host]:port: --listen-address always, --control-address when set.
func checkAddresses(listen, control string) []error {
	var errs []error
	for _, a := range []struct{ flag, addr string }{{"listen-address", listen}, {"control-address", control}} {
		if a.addr == "" && a.flag == "control-address" {
			continue
		}
		if _, port, err := net.SplitHostPort(a.addr); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("--%s: want [host]:port, got %q", a.flag, a.addr))
		}
	}
	return errs
}

// clientFor is the API server and a client for the --kubeconfig given.
func clientFor(path string) (*rest.Config, kubernetes.Interface, error) {
	restConfig, err := kubeconfig.RESTConfig(path)
	if err != nil {
		return nil, nil, err
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig %q: %w", path, err)
	}
	return restConfig, client, nil
}
