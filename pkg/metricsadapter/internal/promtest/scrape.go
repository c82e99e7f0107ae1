package promtest

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// AddScrape adds the samples of one scrape of a /metrics page in the
// Prometheus text format, each with the target labels Prometheus would
// attach (namespace, pod), stamped at. Gauges, counters and untyped
// metrics give one series each; a histogram gives its _bucket (with le),
// _sum and _count series.
func (f *Server) AddScrape(text string, target map[string]string, at time.Time) error {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return fmt.Errorf("parsing the scrape: %w", err)
	}
	var out []Sample
	add := func(name string, m *dto.Metric, extra map[string]string, v float64) {
		lbls := maps.Clone(target)
		for _, l := range m.GetLabel() {
			lbls[l.GetName()] = l.GetValue()
		}
		maps.Copy(lbls, extra)
		lbls["__name__"] = name
		out = append(out, Sample{Labels: lbls, Value: v, At: at})
	}
	for name, fam := range families {
		for _, m := range fam.GetMetric() {
			switch fam.GetType() {
			case dto.MetricType_GAUGE:
				add(name, m, nil, m.GetGauge().GetValue())
			case dto.MetricType_COUNTER:
				add(name, m, nil, m.GetCounter().GetValue())
			case dto.MetricType_UNTYPED:
				add(name, m, nil, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					add(name+"_bucket", m, map[string]string{"le": strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)}, float64(b.GetCumulativeCount()))
				}
				add(name+"_sum", m, nil, h.GetSampleSum())
				add(name+"_count", m, nil, float64(h.GetSampleCount()))
			default:
				return fmt.Errorf("metric %s: type %s is not handled", name, fam.GetType())
			}
		}
	}
	f.Add(out...)
	return nil
}
