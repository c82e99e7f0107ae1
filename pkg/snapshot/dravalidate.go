package snapshot

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// validateClaimSpec refuses what allocation cannot interpret. API server
// validation and defaulting normally guarantee all of it; claims built by
// hand (tests, simulator scenarios) may not.
func validateClaimSpec(spec *resourceapi.ResourceClaimSpec, path string) error {
	seen := map[string]bool{}
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		p := fmt.Sprintf("%s.devices.requests[%d]", path, i)
		if r.Name == "" {
			return fmt.Errorf("%s.name: must not be empty", p)
		}
		if seen[r.Name] {
			return fmt.Errorf("%s.name: duplicate request %q", p, r.Name)
		}
		seen[r.Name] = true
		switch {
		case r.Exactly != nil && len(r.FirstAvailable) > 0:
			return fmt.Errorf("%s: sets both exactly and firstAvailable", p)
		case r.Exactly != nil:
			e := r.Exactly
			if err := validateRequest(e.DeviceClassName, e.AllocationMode, e.Count, e.Selectors, p+".exactly"); err != nil {
				return err
			}
		case len(r.FirstAvailable) > 0:
			for j := range r.FirstAvailable {
				sub := &r.FirstAvailable[j]
				sp := fmt.Sprintf("%s.firstAvailable[%d]", p, j)
				if sub.Name == "" {
					return fmt.Errorf("%s.name: must not be empty", sp)
				}
				if err := validateRequest(sub.DeviceClassName, sub.AllocationMode, sub.Count, sub.Selectors, sp); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("%s: sets neither exactly nor firstAvailable", p)
		}
	}
	for i, c := range spec.Devices.Constraints {
		if c.MatchAttribute == nil || *c.MatchAttribute == "" {
			return fmt.Errorf("%s.devices.constraints[%d].matchAttribute: must be set", path, i)
		}
	}
	return nil
}

func validateRequest(class string, mode resourceapi.DeviceAllocationMode, count int64, sels []resourceapi.DeviceSelector, path string) error {
	if class == "" {
		return fmt.Errorf("%s.deviceClassName: must not be empty", path)
	}
	switch mode {
	case resourceapi.DeviceAllocationModeExactCount:
		if count < 1 {
			return fmt.Errorf("%s.count: must be at least 1 with allocationMode ExactCount, got %d", path, count)
		}
	case resourceapi.DeviceAllocationModeAll:
		if count != 0 {
			return fmt.Errorf("%s.count: must not be set with allocationMode All, got %d", path, count)
		}
	default:
		return fmt.Errorf("%s.allocationMode: want ExactCount or All, got %q", path, mode)
	}
	return validateSelectors(sels, path+".selectors")
}

func validateSelectors(sels []resourceapi.DeviceSelector, path string) error {
	for i, s := range sels {
		if s.CEL == nil || s.CEL.Expression == "" {
			return fmt.Errorf("%s[%d].cel.expression: must not be empty", path, i)
		}
	}
	return nil
}

func validateClaim(c *resourceapi.ResourceClaim) error {
	if err := validateClaimSpec(&c.Spec, "spec"); err != nil {
		return err
	}
	if a := c.Status.Allocation; a != nil {
		for i, r := range a.Devices.Results {
			p := fmt.Sprintf("status.allocation.devices.results[%d]", i)
			switch {
			case r.Driver == "":
				return fmt.Errorf("%s.driver: must not be empty", p)
			case r.Pool == "":
				return fmt.Errorf("%s.pool: must not be empty", p)
			case r.Device == "":
				return fmt.Errorf("%s.device: must not be empty", p)
			}
		}
		if a.NodeSelector != nil {
			if _, err := nodeaffinity.NewNodeSelector(a.NodeSelector); err != nil {
				return fmt.Errorf("status.allocation.nodeSelector: %w", err)
			}
		}
	}
	return nil
}

func validateSlice(sl *resourceapi.ResourceSlice) error {
	spec := &sl.Spec
	switch {
	case spec.Driver == "":
		return fmt.Errorf("spec.driver: must not be empty")
	case spec.Pool.Name == "":
		return fmt.Errorf("spec.pool.name: must not be empty")
	}
	set := 0
	if spec.NodeName != nil {
		if *spec.NodeName == "" {
			return fmt.Errorf("spec.nodeName: must not be empty when set")
		}
		set++
	}
	if spec.NodeSelector != nil {
		if _, err := nodeaffinity.NewNodeSelector(spec.NodeSelector); err != nil {
			return fmt.Errorf("spec.nodeSelector: %w", err)
		}
		set++
	}
	if spec.AllNodes != nil && *spec.AllNodes {
		set++
	}
	if spec.PerDeviceNodeSelection != nil && *spec.PerDeviceNodeSelection {
		set++
	}
	counterSlice := len(spec.SharedCounters) > 0 && len(spec.Devices) == 0
	if set != 1 && !(counterSlice && set == 0) {
		return fmt.Errorf("spec: exactly one of nodeName, nodeSelector, allNodes and perDeviceNodeSelection must be set, got %d", set)
	}
	seen := make(map[string]bool, len(spec.Devices))
	for i, d := range spec.Devices {
		if d.Name == "" {
			return fmt.Errorf("spec.devices[%d].name: must not be empty", i)
		}
		if seen[d.Name] {
			return fmt.Errorf("spec.devices[%d].name: duplicate device %q", i, d.Name)
		}
		seen[d.Name] = true
	}
	return nil
}
