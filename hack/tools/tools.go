//go:build tools

// Package tools pins the control-plane binaries that hack/build-tools.sh
// builds for the local cluster (hack/cluster.sh, test/e2e/cluster):
// kube-apiserver, kube-scheduler, kube-controller-manager and kubectl from
// k8s.io/kubernetes, and etcd at the version Kubernetes itself requires.
//
// kwok/kwokctl (hack/tools/kwok) and Prometheus (hack/tools/prometheus) are
// separate modules: each needs a k8s.io staging version that conflicts with
// the v0.35.4 replace block below.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
