package scenario

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// setStorageDefaults does what the API server and the volume controllers
// would have done to the storage objects: a class binds Immediately unless
// it says otherwise, a claim lives in the default namespace, and a claim
// that names a volume is bound to it.
func (s *Scenario) setStorageDefaults() {
	for i := range s.StorageClasses {
		if s.StorageClasses[i].VolumeBindingMode == nil {
			mode := storagev1.VolumeBindingImmediate
			s.StorageClasses[i].VolumeBindingMode = &mode
		}
	}
	for i := range s.PersistentVolumeClaims {
		c := &s.PersistentVolumeClaims[i]
		if c.Namespace == "" {
			c.Namespace = DefaultNamespace
		}
		if c.Spec.VolumeName != "" {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations["pv.kubernetes.io/bind-completed"] = "yes"
			c.Status.Phase = v1.ClaimBound
		}
	}
}

// validateStorage checks names, and that what claims and pods refer to
// exists: a volume a claim names, a claim a pod mounts.
func (s *Scenario) validateStorage() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
	}
	classes := map[string]bool{}
	for i := range s.StorageClasses {
		name := s.StorageClasses[i].Name
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 || classes[name] {
			bad(fmt.Sprintf("storageClasses[%d].metadata.name", i), "must be a unique DNS subdomain, got %q", name)
		}
		classes[name] = true
		if m := *s.StorageClasses[i].VolumeBindingMode; m != storagev1.VolumeBindingImmediate && m != storagev1.VolumeBindingWaitForFirstConsumer {
			bad(fmt.Sprintf("storageClasses[%d].volumeBindingMode", i), "must be %s or %s, got %q",
				storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer, m)
		}
	}
	volumes := map[string]bool{}
	for i := range s.PersistentVolumes {
		name := s.PersistentVolumes[i].Name
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 || volumes[name] {
			bad(fmt.Sprintf("persistentVolumes[%d].metadata.name", i), "must be a unique DNS subdomain, got %q", name)
		}
		volumes[name] = true
	}
	claims := map[string]bool{}
	for i := range s.PersistentVolumeClaims {
		c := &s.PersistentVolumeClaims[i]
		key := c.Namespace + "/" + c.Name
		if msgs := validation.IsDNS1123Subdomain(c.Name); len(msgs) > 0 || claims[key] {
			bad(fmt.Sprintf("persistentVolumeClaims[%d].metadata.name", i), "must be a unique DNS subdomain in its namespace, got %q", c.Name)
		}
		claims[key] = true
		if v := c.Spec.VolumeName; v != "" && !volumes[v] {
			bad(fmt.Sprintf("persistentVolumeClaims[%d].spec.volumeName", i), "no persistentVolumes entry is named %q", v)
		}
	}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		for j, vol := range w.Pod.Volumes {
			path := fmt.Sprintf("workloads[%d].pod.volumes[%d]", i, j)
			switch {
			case vol.PersistentVolumeClaim != nil:
				if name := vol.PersistentVolumeClaim.ClaimName; !claims[w.Namespace+"/"+name] {
					bad(path+".persistentVolumeClaim.claimName", "no persistentVolumeClaims entry is named %s/%s", w.Namespace, name)
				}
			case vol.Ephemeral != nil:
				if vol.Ephemeral.VolumeClaimTemplate == nil {
					bad(path+".ephemeral.volumeClaimTemplate", "must be set")
				}
			default:
				bad(path, "only persistentVolumeClaim and ephemeral volumes are modelled")
			}
		}
	}
	return errs
}

// AddStorage puts the scenario's storage objects into a snapshot.
func (s *Scenario) AddStorage(snap *snapshot.Snapshot) error {
	for i := range s.StorageClasses {
		if err := snap.SetStorageClass(&s.StorageClasses[i]); err != nil {
			return fmt.Errorf("storageClasses[%d]: %w", i, err)
		}
	}
	for i := range s.PersistentVolumes {
		if err := snap.SetPersistentVolume(&s.PersistentVolumes[i]); err != nil {
			return fmt.Errorf("persistentVolumes[%d]: %w", i, err)
		}
	}
	for i := range s.PersistentVolumeClaims {
		if err := snap.SetPersistentVolumeClaim(&s.PersistentVolumeClaims[i]); err != nil {
			return fmt.Errorf("persistentVolumeClaims[%d]: %w", i, err)
		}
	}
	return nil
}
