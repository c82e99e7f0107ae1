package explain_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/gpuscale/gpuscale/internal/localcluster"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// scrapeAutoscaler starts the pinned Prometheus scraping the autoscaler's
// /metrics at addr every second, as a cluster's Prometheus would scrape
// the upstream Cluster Autoscaler, and returns its query API.
func scrapeAutoscaler(t *testing.T, addr string) promv1.API {
	t.Helper()
	bin := cluster.Tools(t, localcluster.PrometheusTool)
	p, err := localcluster.StartPrometheus(context.Background(), localcluster.PrometheusOptions{
		BinDir: bin, Dir: filepath.Join(t.TempDir(), "prometheus"), ScrapeInterval: time.Second,
		Jobs: []localcluster.ScrapeJob{{Name: "cluster-autoscaler", Targets: []string{addr}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prometheus log:\n%s", p.LogTail(30))
		}
		_ = p.Stop()
	})
	client, err := promapi.NewClient(promapi.Config{Address: p.URL})
	if err != nil {
		t.Fatal(err)
	}
	return promv1.NewAPI(client)
}

// upstreamSeries are queries, by the upstream Cluster Autoscaler's metric
// names and labels, and what their value must satisfy once the test's
// scale-up (node group gpu, 0 to 1) and its removal of the empty node
// cpu-empty have happened. Dashboards and alerts written for upstream run
// these queries unchanged.
var upstreamSeries = []struct {
	query string
	ok    func(float64) bool
	want  string
}{
	{`up{job="cluster-autoscaler"}`, eq(1), "1"},
	{`sum(cluster_autoscaler_scaled_up_nodes_total)`, atLeast(1), ">= 1"},
	{`sum(cluster_autoscaler_scaled_down_nodes_total{reason="empty"})`, atLeast(1), ">= 1"},
	{`cluster_autoscaler_function_duration_seconds_count{function="main"}`, atLeast(1), ">= 1"},
	{`cluster_autoscaler_function_duration_seconds_bucket{function="main",le="+Inf"}`, atLeast(1), ">= 1"},
	{`cluster_autoscaler_nodes_count{state="ready"}`, atLeast(1), ">= 1"},
	{`cluster_autoscaler_node_groups_count{node_group_type="autoscaled"}`, eq(3), "3"},
	{`cluster_autoscaler_cluster_safe_to_autoscale`, eq(1), "1"},
	{`cluster_autoscaler_unschedulable_pods_count{type="unschedulable"}`, atLeast(1), ">= 1 (too-big stays pending)"},
	{`cluster_autoscaler_unremovable_nodes_count{reason="BlockedByPod"}`, eq(2), "2 (cpu-pdb and cpu-bare)"},
	{`cluster_autoscaler_unneeded_nodes_count`, atLeast(0), "present"},
	{`cluster_autoscaler_scale_down_in_cooldown`, atLeast(0), "present"},
	{`cluster_autoscaler_max_nodes_count`, atLeast(0), "present"},
	{`time() - cluster_autoscaler_last_activity{activity="main"}`, atLeast(-5), "a recent loop"},
	{`cluster_autoscaler_last_activity{activity="scaleUp"}`, atLeast(1), "a scale-up time"},
	{`cluster_autoscaler_last_activity{activity="scaleDown"}`, atLeast(1), "a scale-down time"},
}

func eq(v float64) func(float64) bool      { return func(x float64) bool { return x == v } }
func atLeast(v float64) func(float64) bool { return func(x float64) bool { return x >= v } }

// checkUpstreamMetrics queries Prometheus until every upstream series has
// one sample with the wanted value.
func checkUpstreamMetrics(t *testing.T, api promv1.API) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var last []string
		for _, s := range upstreamSeries {
			v, _, _, err := api.Query(ctx, s.query, time.Now())
			vec, ok := v.(model.Vector)
			switch {
			case err != nil:
				last = append(last, fmt.Sprintf("%s: %v", s.query, err))
			case !ok || len(vec) != 1:
				last = append(last, fmt.Sprintf("%s: %v, want one sample %s", s.query, v, s.want))
			case !s.ok(float64(vec[0].Value)):
				last = append(last, fmt.Sprintf("%s = %v, want %s", s.query, vec[0].Value, s.want))
			}
		}
		if len(last) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s, Prometheus scraping the autoscaler answers:\n%s", strings.Join(last, "\n"))
		}
		time.Sleep(time.Second)
	}
}
