package gce

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// GroupOptionsConfig is the nodeGroupOptions section of the cloud config:
// per-group autoscaling options keyed by managed instance group name, or
// by a name prefix ending in "*" (GKE names a node pool's groups
// gke-<cluster>-<pool>-<hash>-grp), with the upstream option keys
// (cloudprovider.GroupOptionKeys):
//
//	nodeGroupOptions:
//	  gke-prod-a100-*:
//	    scaledownunneededtime: 20m
//	    scaledowngpuutilizationthreshold: 0.3
//	  gke-prod-cpu-1a2b3c4d-grp:
//	    maxnodeprovisiontime: 10m
//
// An exact name wins over prefixes, and the longest prefix over shorter
// ones; a group matches one entry, whose options it takes whole.
type GroupOptionsConfig map[string]map[string]cloudprovider.OptionText

// validate parses every entry; errors name the entry and the option.
func (c GroupOptionsConfig) validate() []error {
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(c)) {
		name := strings.TrimSuffix(key, "*")
		if name == "" || !resourceName.MatchString(name) && !resourceNamePrefix(name) {
			errs = append(errs, fmt.Errorf("nodeGroupOptions[%q]: want a managed instance group name, or a name prefix ending in *", key))
			continue
		}
		o, unsupported, err := cloudprovider.ParseGroupOptionTexts(c[key])
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("nodeGroupOptions[%q]: %w", key, err))
		case len(unsupported) > 0:
			errs = append(errs, fmt.Errorf("nodeGroupOptions[%q]: %s: not applied by gpuscale; remove it", key, strings.Join(unsupported, ", ")))
		case o == nil:
			errs = append(errs, fmt.Errorf("nodeGroupOptions[%q]: no option set", key))
		}
	}
	return errs
}

// resourceNamePrefix: a prefix of a Compute Engine resource name.
func resourceNamePrefix(p string) bool { return resourceName.MatchString(p + "a") }

// forGroup returns the options of the MIG named name, nil when no entry
// matches. The configuration was validated, so entries parse.
func (c GroupOptionsConfig) forGroup(name string) *snapshot.GroupOptions {
	best, found := "", false
	for key := range c {
		prefix, wild := strings.CutSuffix(key, "*")
		switch {
		case key == name:
			best, found = key, true
		case wild && strings.HasPrefix(name, prefix) && (!found || best != name && len(key) > len(best)):
			best, found = key, true
		}
		if found && best == name {
			break
		}
	}
	if !found {
		return nil
	}
	o, _, _ := cloudprovider.ParseGroupOptionTexts(c[best])
	return o
}
