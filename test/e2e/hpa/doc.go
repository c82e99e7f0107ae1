// Package hpa proves the GPU-metric Horizontal Pod Autoscaler walkthrough end
// to end on real components, all on loopback: a local control plane (the HPA
// controller inside kube-controller-manager), kwok GPU nodes, `gpuscale
// dcgm-sim` standing in for dcgm-exporter, a real Prometheus scraping it as
// kube-prometheus-stack scrapes dcgm-exporter, and `gpuscale metrics-adapter`
// serving custom.metrics.k8s.io with the walkthrough's adapter rules as
// written. The tests live in the _test.go files; they skip with SKIP_E2E=1
// or -short.
package hpa
