package schedulerparity

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// volumeFeatures tags what a case's claims and volumes exercise.
func volumeFeatures(c *Cluster, p *v1.Pod) []string {
	var f []string
	add := func(ok bool, tag string) {
		if ok {
			f = append(f, tag)
		}
	}
	for _, vol := range p.Spec.Volumes {
		if d := diskFeature(&vol); d != "" {
			f = append(f, d)
			add(diskOnSomeNode(c, &vol), "disk:onNode")
			continue
		}
		name := p.Name + "-" + vol.Name
		if vol.PersistentVolumeClaim != nil {
			name = vol.PersistentVolumeClaim.ClaimName
		}
		i := slices.IndexFunc(c.PersistentVolumeClaims, func(c *v1.PersistentVolumeClaim) bool {
			return c.Namespace == p.Namespace && c.Name == name
		})
		if i < 0 {
			f = append(f, "pvc:missing")
			continue
		}
		pvc := c.PersistentVolumeClaims[i]
		if vol.PersistentVolumeClaim != nil && slices.Contains(pvc.Spec.AccessModes, v1.ReadWriteOncePod) {
			f = append(f, rwopFeature(c, p, pvc.Name))
		}
		if vol.Ephemeral != nil {
			owned := len(pvc.OwnerReferences) == 1 && pvc.OwnerReferences[0].UID == p.UID
			add(!owned, "ephemeral:notOwned")
			add(owned && pvc.Spec.VolumeName != "", "ephemeral:bound")
			add(owned && pvc.Spec.VolumeName == "", "ephemeral:unbound")
			if !owned {
				continue
			}
		}
		_, complete := pvc.Annotations["pv.kubernetes.io/bind-completed"]
		_, selected := pvc.Annotations["volume.kubernetes.io/selected-node"]
		switch {
		case pvc.Status.Phase == v1.ClaimLost:
			f = append(f, "pvc:lost")
		case pvc.DeletionTimestamp != nil:
			f = append(f, "pvc:deleting")
		case pvc.Spec.VolumeName != "" && !complete:
			f = append(f, "pvc:prebound")
		case pvc.Spec.VolumeName == "":
			cls := *pvc.Spec.StorageClassName
			add(cls != immediateClass, "pvc:"+cls)
			add(cls == immediateClass, "pvc:"+cls+":unbound")
			add(selected, "pvc:selectedNode")
		default:
			j := slices.IndexFunc(c.PersistentVolumes, func(pv *v1.PersistentVolume) bool { return pv.Name == pvc.Spec.VolumeName })
			if j < 0 {
				f = append(f, "pv:missing")
				continue
			}
			f = append(f, "pvc:bound")
			f = append(f, pvFeatures(c.PersistentVolumes[j])...)
		}
	}
	return f
}

func pvFeatures(pv *v1.PersistentVolume) []string {
	var f []string
	if len(pv.Labels) == 0 {
		f = append(f, "pv:unlabelled")
	}
	for k, v := range pv.Labels {
		f = append(f, "pv:"+k)
		if strings.Contains(v, "__") {
			f = append(f, "pv:multiZone")
		}
	}
	if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil {
		f = append(f, "pv:nodeAffinity")
		if len(na.Required.NodeSelectorTerms) > 1 {
			f = append(f, "pv:nodeAffinity:multiTerm")
		}
		for _, t := range na.Required.NodeSelectorTerms {
			for _, e := range t.MatchExpressions {
				if e.Key == CSIZoneKey {
					f = append(f, "pv:nodeAffinity:"+CSIZoneKey)
				}
			}
		}
	}
	return f
}

// rwopFeature: a ReadWriteOncePod claim nobody else uses, one a running pod
// of the namespace uses, or one only a pod of another namespace names.
func rwopFeature(c *Cluster, p *v1.Pod, claim string) string {
	tag := "rwop:free"
	for _, q := range c.Pods {
		for _, v := range q.Spec.Volumes {
			if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claim {
				continue
			}
			if q.Namespace == p.Namespace {
				return "rwop:inUse"
			}
			tag = "rwop:otherNamespace"
		}
	}
	return tag
}

func diskFeature(v *v1.Volume) string {
	switch {
	case v.GCEPersistentDisk != nil:
		return "disk:gcePersistentDisk"
	case v.AWSElasticBlockStore != nil:
		return "disk:awsElasticBlockStore"
	case v.ISCSI != nil:
		return "disk:iscsi"
	case v.RBD != nil:
		return "disk:rbd"
	}
	return ""
}

// diskOnSomeNode: a running pod mounts a disk of the same kind.
func diskOnSomeNode(c *Cluster, v *v1.Volume) bool {
	for _, q := range c.Pods {
		for i := range q.Spec.Volumes {
			if diskFeature(&q.Spec.Volumes[i]) == diskFeature(v) {
				return true
			}
		}
	}
	return false
}
