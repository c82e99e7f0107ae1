package localcluster

// ServiceMonitorTarget is the Kubernetes identity a Prometheus Operator
// ServiceMonitor scrape attaches to every series of an exporter: the
// namespace, Service, Pod and container of the exporter, and the Service's
// port name. Prometheus Operator sets these target labels (namespace,
// service, pod, container, endpoint) through its relabelling, and the job
// label to the Service name.
type ServiceMonitorTarget struct {
	Namespace string
	Service   string
	Pod       string
	Container string
	Endpoint  string
}

// DCGMExporterTarget returns how the GPU operator's dcgm-exporter looks to a
// kube-prometheus-stack Prometheus (the GPU operator installed in namespace
// nvidia-gpu-operator, with dcgmExporter.serviceMonitor.enabled=true).
func DCGMExporterTarget() ServiceMonitorTarget {
	return ServiceMonitorTarget{
		Namespace: "nvidia-gpu-operator",
		Service:   "nvidia-dcgm-exporter",
		Pod:       "nvidia-dcgm-exporter-local",
		Container: "nvidia-dcgm-exporter",
		Endpoint:  "gpu-metrics",
	}
}

// ServiceMonitorJob scrapes targets as a ServiceMonitor would: the job is
// named after the Service and every series carries the target labels of
// id, with honor_labels false. An exporter's own labels that clash with
// them (dcgm-exporter's namespace, pod and container of the pod using a
// GPU) therefore arrive renamed exported_namespace, exported_pod and
// exported_container, as prometheus-adapter rules written for
// kube-prometheus-stack expect.
func ServiceMonitorJob(targets []string, id ServiceMonitorTarget) ScrapeJob {
	labels := map[string]string{}
	for k, v := range map[string]string{
		"namespace": id.Namespace,
		"service":   id.Service,
		"pod":       id.Pod,
		"container": id.Container,
		"endpoint":  id.Endpoint,
	} {
		if v != "" {
			labels[k] = v
		}
	}
	name := id.Service
	if name == "" {
		name = "service-monitor"
	}
	return ScrapeJob{
		Name:        name,
		Targets:     append([]string(nil), targets...),
		Labels:      labels,
		HonorLabels: false,
	}
}

// DCGMExporterJob scrapes a dcgm-exporter (or `gpuscale dcgm-sim`) at
// target (host:port) as kube-prometheus-stack scrapes the GPU operator's.
func DCGMExporterJob(target string) ScrapeJob {
	return ServiceMonitorJob([]string{target}, DCGMExporterTarget())
}
