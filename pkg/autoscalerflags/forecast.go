package autoscalerflags

import (
	"strconv"

	"github.com/gpuscale/gpuscale/pkg/forecast"
)

func (f *Flags) defineForecast() {
	fs, o := f.fs, &f.Decision.Autoscaler.Forecast
	fs.BoolVar(&o.Enabled, "forecast-buffers", o.Enabled, "Hold warm capacity for inference workloads ahead of their HPA: forecast the demand each HPA reads one --forecast-lead ahead and keep room for the replicas it will ask for beyond those running.")
	fs.DurationVar(&o.Lead, "forecast-lead", o.Lead, "How far ahead demand is forecast: the time from a scale-up to a serving replica on a new node (boot, device plugin, model load).")
	fs.Float64Var(&o.Quantile, "forecast-quantile", o.Quantile, "Quantile of the forecast's recent under-estimates added to it as headroom (0 to 1).")
	fs.DurationVar(&o.Window, "forecast-window", o.Window, "How much recent history the forecast's errors are measured over.")
	fs.Int32Var(&o.MaxBuffer, "forecast-max-buffer", o.MaxBuffer, "Most warm replicas held for one workload; 0: only its HPA's maxReplicas bounds them.")
}

func (v *problems) forecast(o forecast.Options) {
	v.notNegative("forecast-lead", o.Lead)
	v.notNegative("forecast-window", o.Window)
	if q := o.Quantile; !(q >= 0 && q <= 1) {
		v.add("forecast-quantile", "must be from 0 to 1, got %s", strconv.FormatFloat(q, 'g', -1, 64))
	}
	if o.MaxBuffer < 0 {
		v.add("forecast-max-buffer", "must not be negative, got %d", o.MaxBuffer)
	}
}
