package run

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"cloud.google.com/go/compute/metadata"
	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider/gce"
)

// newGCEProvider builds the Compute Engine provider: --cloud-config (see
// gce.Config) for the project, zones and prices, Application Default
// Credentials (Workload Identity on GKE) for the API. Auto-discovery needs
// a project and zones; those the file leaves out come from the metadata
// server: the project, and the zones of the region the autoscaler runs in.
func newGCEProvider(ctx context.Context, shell ShellOptions, logger *slog.Logger) (cloudprovider.CloudProvider, error) {
	cfg, err := gce.LoadConfig(shell.CloudConfig)
	if err != nil {
		return nil, err
	}
	// What the flags say is checked before credentials are looked for: a
	// typo in a group URL should not be reported as a credentials problem,
	// nor only after one is fixed.
	var groups []gce.NodeGroupSpec
	for _, g := range shell.NodeGroups {
		if _, err := gce.ParseMIGURL(g.Name); err != nil {
			return nil, fmt.Errorf("--nodes=%d:%d:%s: %w", g.Min, g.Max, g.Name, err)
		}
		groups = append(groups, gce.NodeGroupSpec{Min: g.Min, Max: g.Max, URL: g.Name})
	}
	svc, err := compute.NewService(ctx, option.WithScopes(compute.ComputeScope))
	if err != nil {
		return nil, fmt.Errorf("--cloud-provider=gce: compute client: %w", err)
	}
	opts := gce.Options{Service: svc, Config: cfg, Logger: logger, NodeGroups: groups}
	for _, d := range shell.AutoDiscovery {
		if d.Kind == "mig" {
			opts.AutoDiscovery = append(opts.AutoDiscovery, gce.DiscoverySpec{NamePrefix: d.NamePrefix, Min: d.MinSize, Max: d.MaxSize})
		}
	}
	if len(opts.AutoDiscovery) > 0 {
		if err := fillFromMetadata(ctx, svc, cfg, logger); err != nil {
			return nil, err
		}
	}
	if cfg.RefreshInterval != nil {
		opts.RefreshInterval = cfg.RefreshInterval.Duration
	}
	if cfg.CallTimeout != nil {
		opts.CallTimeout = cfg.CallTimeout.Duration
	}
	return gce.New(opts)
}

// fillFromMetadata sets the project and zones the cloud config leaves out.
func fillFromMetadata(ctx context.Context, svc *compute.Service, cfg *gce.Config, logger *slog.Logger) error {
	if cfg.Project != "" && len(cfg.Zones) > 0 {
		return nil
	}
	if !metadata.OnGCEWithContext(ctx) {
		var missing []string
		if cfg.Project == "" {
			missing = append(missing, "project")
		}
		if len(cfg.Zones) == 0 {
			missing = append(missing, "zones")
		}
		return fmt.Errorf("--node-group-auto-discovery=mig: set %s in --cloud-config (no metadata server: not running on GCE)", strings.Join(missing, " and "))
	}
	if cfg.Project == "" {
		p, err := metadata.ProjectIDWithContext(ctx)
		if err != nil {
			return fmt.Errorf("--cloud-provider=gce: project from the metadata server: %w", err)
		}
		cfg.Project = p
	}
	if len(cfg.Zones) == 0 {
		zone, err := metadata.ZoneWithContext(ctx)
		if err != nil {
			return fmt.Errorf("--cloud-provider=gce: zone from the metadata server: %w", err)
		}
		region := zone
		if i := strings.LastIndex(zone, "-"); i > 0 {
			region = zone[:i]
		}
		if cfg.Zones, err = gce.RegionZones(ctx, svc, cfg.Project, region); err != nil {
			return fmt.Errorf("--cloud-provider=gce: zones of region %s: %w", region, err)
		}
	}
	logger.Info("gce: auto-discovery scope from the metadata server", "project", cfg.Project, "zones", cfg.Zones)
	return cfg.Validate()
}
