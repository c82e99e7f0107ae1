package aws

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"time"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/strictyaml"
)

// DefaultRefreshInterval is how long the groups, their instances and their
// templates are cached between full reloads. The provider's own changes
// (desired capacity, terminated instances) update the cache at once, so
// only changes made by others wait for the next reload.
const DefaultRefreshInterval = time.Minute

// Config is the optional --cloud-config file of --cloud-provider=aws, in
// YAML. Every field may be omitted.
type Config struct {
	// Region overrides the SDK's own resolution (AWS_REGION, the shared
	// configuration, then the instance metadata service).
	Region string `json:"region,omitempty"`
	// RefreshInterval is the cache lifetime, a Go duration such as "30s"
	// (DefaultRefreshInterval when omitted); Interval returns it parsed.
	RefreshInterval string `json:"refreshInterval,omitempty"`
	// CallTimeout bounds each AWS call, a Go duration (DefaultCallTimeout
	// when omitted); Timeout returns it parsed.
	CallTimeout string `json:"callTimeout,omitempty"`
	// AutoScalingEndpoint and EC2Endpoint replace the SDK's endpoints (VPC
	// interface endpoints, for example).
	AutoScalingEndpoint string `json:"autoScalingEndpoint,omitempty"`
	EC2Endpoint         string `json:"ec2Endpoint,omitempty"`
	// SQSEndpoint replaces the SDK's SQS endpoint, for the interruption
	// queue (--aws-interruption-queue).
	SQSEndpoint string `json:"sqsEndpoint,omitempty"`
	// Prices are on-demand dollars per hour by instance type; they win over
	// the built-in table.
	Prices map[string]float64 `json:"prices,omitempty"`
	// SpotPrices are dollars per hour by instance type for groups that run
	// spot capacity; without one, a spot group is priced on demand.
	SpotPrices map[string]float64 `json:"spotPrices,omitempty"`
}

// LoadConfig reads and validates the file at path; an empty path gives the
// empty configuration.
func LoadConfig(path string) (*Config, error) {
	return cloudprovider.LoadCloudConfig(path, ParseConfig)
}

// ParseConfig decodes YAML strictly (unknown and duplicate fields are
// errors) and validates it.
func ParseConfig(data []byte) (*Config, error) {
	c := &Config{}
	if err := strictyaml.UnmarshalAndValidate(data, c, c.Validate); err != nil {
		return nil, err
	}
	return c, nil
}

// Interval is RefreshInterval parsed, 0 (the default) when omitted or
// invalid; Validate reports an invalid one.
func (c *Config) Interval() time.Duration {
	d, _ := time.ParseDuration(c.RefreshInterval)
	return max(d, 0)
}

// Timeout is CallTimeout parsed, 0 (the default) when omitted or invalid;
// Validate reports an invalid one.
func (c *Config) Timeout() time.Duration {
	d, _ := time.ParseDuration(c.CallTimeout)
	return max(d, 0)
}

// Validate reports every bad field, naming it and its value.
func (c *Config) Validate() error {
	var errs []error
	for _, f := range []struct{ field, v string }{{"refreshInterval", c.RefreshInterval}, {"callTimeout", c.CallTimeout}} {
		if f.v == "" {
			continue
		}
		if d, err := time.ParseDuration(f.v); err != nil {
			errs = append(errs, fmt.Errorf("%s: want a duration such as 30s, got %q", f.field, f.v))
		} else if d < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative, got %q", f.field, f.v))
		}
	}
	for field, v := range map[string]string{"autoScalingEndpoint": c.AutoScalingEndpoint, "ec2Endpoint": c.EC2Endpoint, "sqsEndpoint": c.SQSEndpoint} {
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s: want an http(s) URL, got %q", field, v))
		}
	}
	errs = append(errs, validatePrices("prices", c.Prices)...)
	errs = append(errs, validatePrices("spotPrices", c.SpotPrices)...)
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

func validatePrices(field string, prices map[string]float64) []error {
	var errs []error
	for typ, p := range prices {
		if typ == "" || p <= 0 {
			errs = append(errs, fmt.Errorf("%s: want an instance type and a positive price, got %q: %g", field, typ, p))
		}
	}
	return errs
}
