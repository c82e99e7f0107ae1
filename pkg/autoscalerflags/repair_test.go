package autoscalerflags_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/autoscalerflags"
)

func TestRepairFlags(t *testing.T) {
	s, err := autoscalerflags.ParseSettings("node-repair=true,repair-condition=GpuHealthy=False:5m,repair-max-percentage=25")
	if err != nil {
		t.Fatal(err)
	}
	d, err := autoscalerflags.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	r := d.Autoscaler.Repair
	if !r.Enabled || len(r.Conditions) != 1 || r.Conditions[0].Type != "GpuHealthy" || r.Conditions[0].After != 5*time.Minute || r.MaxPercentage != 25 {
		t.Errorf("repair options %+v: want on, only the given condition, 25%%", r)
	}
	def, err := autoscalerflags.Parse()
	if err != nil || def.Autoscaler.Repair.Enabled || len(def.Autoscaler.Repair.Conditions) != 3 {
		t.Errorf("defaults %+v, %v: want repair off with the three published conditions", def.Autoscaler.Repair, err)
	}
	for _, tc := range []struct{ settings, want string }{
		{"repair-condition=Ready", `--repair-condition: repair condition "Ready": want Type=Status:duration`},
		{"repair-max-percentage=0,repair-max-unhealthy-percentage=101", "--repair-max-percentage: must be above 0 and at most 100, got 0"},
		{"repair-max-unhealthy-percentage=101", "--repair-max-unhealthy-percentage: must be from 0 to 100, got 101"},
		{"repair-missing-gpus-after=-1m", "--repair-missing-gpus-after"},
	} {
		s, err := autoscalerflags.ParseSettings(tc.settings)
		if err == nil {
			_, err = autoscalerflags.Parse(s)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.settings, err, tc.want)
		}
	}
}
