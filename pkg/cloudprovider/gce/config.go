package gce

import (
	"errors"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/strictyaml"
)

// Config is the --cloud-config file for --cloud-provider=gce. Every field
// is optional; unknown fields are errors.
//
//	project: my-project            # default: the metadata server's project
//	zones: [us-central1-a, us-central1-b]  # where auto-discovery looks
//	clusterName: prod              # GKE cluster: node-pool label from group names
//	refreshInterval: 30s           # how long listed sizes are reused
//	callTimeout: 1m                # bounds each API call (DefaultCallTimeout)
//	prices:                        # override or add to the built-in table
//	  machineTypes:
//	    a3-highgpu-8g: {onDemand: 88.25, spot: 26.5}
//	  accelerators:
//	    nvidia-tesla-t4: {onDemand: 0.35, spot: 0.11}
//	nodeGroupOptions:              # per-group options (options.go)
//	  gke-prod-a100-*: {scaledownunneededtime: 20m}
type Config struct {
	Project          string             `json:"project,omitempty"`
	Zones            []string           `json:"zones,omitempty"`
	ClusterName      string             `json:"clusterName,omitempty"`
	RefreshInterval  *metav1.Duration   `json:"refreshInterval,omitempty"`
	CallTimeout      *metav1.Duration   `json:"callTimeout,omitempty"`
	Prices           PriceOverrides     `json:"prices,omitempty"`
	NodeGroupOptions GroupOptionsConfig `json:"nodeGroupOptions,omitempty"`
}

// PriceOverrides replace or add hourly prices, by machine type and by
// accelerator type.
type PriceOverrides struct {
	MachineTypes map[string]Price `json:"machineTypes,omitempty"`
	Accelerators map[string]Price `json:"accelerators,omitempty"`
}

// LoadConfig reads and validates the file; an empty path is an empty
// configuration.
func LoadConfig(path string) (*Config, error) {
	return cloudprovider.LoadCloudConfig(path, ParseConfig)
}

// ParseConfig decodes strictly and validates.
func ParseConfig(data []byte) (*Config, error) {
	var cfg Config
	if err := strictyaml.UnmarshalAndValidate(data, &cfg, cfg.Validate); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// Validate reports every bad field, naming it and its value.
func (c *Config) Validate() error {
	var errs []error
	if c.Project != "" && !projectID.MatchString(c.Project) {
		errs = append(errs, fmt.Errorf("project: %q is not a project id", c.Project))
	}
	seen := map[string]bool{}
	for i, z := range c.Zones {
		switch {
		case !zoneName.MatchString(z):
			errs = append(errs, fmt.Errorf("zones[%d]: %q is not a zone name", i, z))
		case seen[z]:
			errs = append(errs, fmt.Errorf("zones[%d]: %q is listed twice", i, z))
		}
		seen[z] = true
	}
	if c.ClusterName != "" && !resourceName.MatchString(c.ClusterName) {
		errs = append(errs, fmt.Errorf("clusterName: %q is not a GKE cluster name", c.ClusterName))
	}
	if c.RefreshInterval != nil && c.RefreshInterval.Duration < 0 {
		errs = append(errs, fmt.Errorf("refreshInterval: must not be negative, got %s", c.RefreshInterval.Duration))
	}
	if c.CallTimeout != nil && c.CallTimeout.Duration < 0 {
		errs = append(errs, fmt.Errorf("callTimeout: must not be negative, got %s", c.CallTimeout.Duration))
	}
	errs = append(errs, checkPrices("prices.machineTypes", c.Prices.MachineTypes)...)
	errs = append(errs, checkPrices("prices.accelerators", c.Prices.Accelerators)...)
	errs = append(errs, c.NodeGroupOptions.validate()...)
	return errors.Join(errs...)
}

func checkPrices(field string, m map[string]Price) []error {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		p := m[name]
		if p.OnDemand < 0 || p.Spot < 0 {
			errs = append(errs, fmt.Errorf("%s.%s: prices must not be negative, got onDemand %g, spot %g", field, name, p.OnDemand, p.Spot))
		}
	}
	return errs
}
