package aws

import (
	"math"
	"testing"
)

// FuzzParseConfig feeds the AWS --cloud-config reader arbitrary documents:
// it must never panic, and what it accepts must validate again and hold
// only usable prices and a usable refresh interval.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"region: eu-west-1\nrefreshInterval: 30s\nprices:\n  p5.48xlarge: 55.04\nspotPrices:\n  g5.xlarge: 0.45\nautoScalingEndpoint: https://autoscaling.eu-west-1.amazonaws.com\n",
		"", "null", "{}", "refreshInterval: -1s\n", "refreshInterval: soon\n", "prices: {g5.xlarge: .nan}\n",
		"prices: {g5.xlarge: .inf}\n", "spotPrices: {'': 1}\n", "ec2Endpoint: ftp://x\n", "region: [a]\n", "regoin: x\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted, then invalid: %v", err)
		}
		if c.Interval() < 0 {
			t.Fatalf("negative refresh interval %s from %q", c.Interval(), data)
		}
		for _, m := range []map[string]float64{c.Prices, c.SpotPrices} {
			for typ, p := range m {
				if typ == "" || !(p > 0) || math.IsInf(p, 0) {
					t.Fatalf("accepted price %q: %g from %q", typ, p, data)
				}
			}
		}
	})
}
