package cloudprovider

import (
	"strings"
	"testing"
	"time"
)

func TestParseGroupOptions(t *testing.T) {
	o, unsupported, err := ParseGroupOptions(map[string]string{
		"scaledownutilizationthreshold":    "0.3",
		"ScaleDownGpuUtilizationThreshold": "0.7",
		"scaledownunneededtime":            "2m",
		"scaledownunreadytime":             "30m0s",
		"maxnodeprovisiontime":             "25m",
		"ignoredaemonsetsutilization":      "true",
		"zeroormaxnodescaling":             "true",
		"ReservedNodes":                    "8",
		"capacityblockend":                 "2026-12-01T12:30:00+01:00",
	})
	if err != nil {
		t.Fatal(err)
	}
	if *o.ScaleDownUtilizationThreshold != 0.3 || *o.ScaleDownGPUUtilizationThreshold != 0.7 ||
		*o.ScaleDownUnneededTime != 2*time.Minute || *o.ScaleDownUnreadyTime != 30*time.Minute ||
		*o.MaxNodeProvisionTime != 25*time.Minute || !*o.IgnoreDaemonSetsUtilization ||
		*o.ReservedNodes != 8 || !o.CapacityBlockEnd.Equal(time.Date(2026, 12, 1, 11, 30, 0, 0, time.UTC)) {
		t.Errorf("options %+v", o)
	}
	if len(unsupported) != 1 || unsupported[0] != "zeroormaxnodescaling" {
		t.Errorf("unsupported %v, want [zeroormaxnodescaling]", unsupported)
	}
	if o, _, err := ParseGroupOptions(nil); o != nil || err != nil {
		t.Errorf("no values: %+v %v, want nil options", o, err)
	}
}

// A bad key or value is an error naming it, and no option is applied.
func TestParseGroupOptionsRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		values map[string]string
		want   string
	}{
		{map[string]string{"scaledownutilizationthreshold": "1.5"}, `scaledownutilizationthreshold="1.5": want a number from 0 to 1`},
		{map[string]string{"scaledownunneededtime": "ten minutes"}, `scaledownunneededtime="ten minutes": want a non-negative duration`},
		{map[string]string{"maxnodeprovisiontime": "-1m"}, `maxnodeprovisiontime="-1m"`},
		{map[string]string{"scaledownunneedtime": "1m"}, `scaledownunneedtime="1m": unknown option; known: capacityblockend, ignoredaemonsetsutilization,`},
		{map[string]string{"capacityblockend": "tomorrow"}, `capacityblockend="tomorrow": want an RFC 3339 time`},
		{map[string]string{"reservednodes": "-2"}, `reservednodes="-2": want a whole number of nodes`},
		{map[string]string{"reservednodes": "2.5"}, `reservednodes="2.5": want a whole number of nodes`},
		{map[string]string{"ignoredaemonsetsutilization": "yes", "scaledownunneededtime": "1m"}, `ignoredaemonsetsutilization="yes": want true or false`},
	} {
		o, _, err := ParseGroupOptions(tc.values)
		if err == nil || !strings.Contains(err.Error(), tc.want) || o != nil {
			t.Errorf("%v: options %+v, error %v; want none and %q", tc.values, o, err, tc.want)
		}
	}
}
