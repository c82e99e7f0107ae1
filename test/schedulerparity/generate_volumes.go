package schedulerparity

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Storage the volume cases draw on, beside wffcClass and immediateClass.
const (
	// zonalClass provisions at the first consumer, only in some zones.
	zonalClass = "zonal"
	// localClass provisions nothing: its claims bind static volumes only.
	localClass = "local"
	// CSIZoneKey is the topology key a CSI driver's node plugin writes,
	// which only some nodes carry.
	CSIZoneKey = "topology.ebs.csi.aws.com/zone"
)

// volumeClasses are the classes of every case; zonal's allowed zones vary.
func (g *gen) volumeClasses() []*storagev1.StorageClass {
	zonal := storageClass(zonalClass, storagev1.VolumeBindingWaitForFirstConsumer)
	term := v1.TopologySelectorTerm{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
		{Key: v1.LabelTopologyZone, Values: distinct(g, zones)}}}
	if g.chance(0.2) {
		term.MatchLabelExpressions = append(term.MatchLabelExpressions,
			v1.TopologySelectorLabelRequirement{Key: RackKey, Values: []string{pick(g, racks)}})
	}
	zonal.AllowedTopologies = []v1.TopologySelectorTerm{term}
	if g.chance(0.3) { // or a rack anywhere
		zonal.AllowedTopologies = append(zonal.AllowedTopologies, v1.TopologySelectorTerm{
			MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: RackKey, Values: []string{pick(g, racks)}}}})
	}
	local := storageClass(localClass, storagev1.VolumeBindingWaitForFirstConsumer)
	local.Provisioner = "kubernetes.io/no-provisioner"
	return []*storagev1.StorageClass{
		storageClass(wffcClass, storagev1.VolumeBindingWaitForFirstConsumer),
		storageClass(immediateClass, storagev1.VolumeBindingImmediate),
		zonal, local,
	}
}

// addVolumes attaches 1–2 claims and sometimes a generic ephemeral volume:
// mostly bound claims whose volume is placed by zone labels (VolumeZone)
// or node affinity (VolumeBinding), or claims bound at the first consumer
// (provisioned anywhere, in some zones, or matched to static local
// volumes). Rarely the claim is missing, unbound in an Immediate class,
// pre-bound, lost, being deleted, or bound to a missing volume; all legal
// states that make the whole pod unschedulable.
func (g *gen) addVolumes(c *Cluster, p *v1.Pod) {
	if g.chance(0.8) {
		g.staticVolumes(c, p.Namespace)
	}
	for j := range 1 + g.n(2) {
		claim := fmt.Sprintf("data-%d", j)
		if pvc := g.claim(c, claim, p.Namespace, j); pvc != nil {
			c.PersistentVolumeClaims = append(c.PersistentVolumeClaims, pvc)
			g.readWriteOncePod(c, pvc)
		}
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{
			Name:         fmt.Sprintf("vol-%d", j),
			VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}},
		})
	}
	if g.chance(0.2) {
		g.ephemeralVolume(c, p)
	}
}

func newClaim(name, ns string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("pvc-uid-" + ns + "-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")}},
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	}
}

// claim draws one claim's state; nil is a claim that does not exist.
func (g *gen) claim(c *Cluster, name, ns string, j int) *v1.PersistentVolumeClaim {
	pvc := newClaim(name, ns)
	switch x := g.r.Float64(); {
	case x < 0.03:
		return nil
	case x < 0.06:
		pvc.Spec.StorageClassName = ptr(immediateClass)
	case x < 0.08: // pre-bound: names a volume, binding not complete
		pvc.Spec.StorageClassName = ptr(pick(g, []string{immediateClass, wffcClass}))
		pvc.Spec.VolumeName = fmt.Sprintf("pv-%d", j)
		c.PersistentVolumes = append(c.PersistentVolumes, g.pv(pvc.Spec.VolumeName, pvc))
	case x < 0.22:
		pvc.Spec.StorageClassName = ptr(wffcClass)
		if g.chance(0.2) { // provisioning started for a node (perhaps one gone)
			pvc.Annotations = map[string]string{"volume.kubernetes.io/selected-node": fmt.Sprintf("node-%d", g.n(len(c.Nodes)+1))}
		}
	case x < 0.32:
		pvc.Spec.StorageClassName = ptr(zonalClass)
	case x < 0.44:
		pvc.Spec.StorageClassName = ptr(localClass)
		g.shapeLocalClaim(pvc)
	default:
		pvName := fmt.Sprintf("pv-%d", j)
		pvc.Spec.StorageClassName = ptr(immediateClass)
		pvc.Spec.VolumeName = pvName
		pvc.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
		pvc.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: pvc.Spec.AccessModes,
			Capacity: pvc.Spec.Resources.Requests.DeepCopy()}
		switch y := g.r.Float64(); {
		case y < 0.02:
			pvc.Status.Phase = v1.ClaimLost // its volume is gone
		case y < 0.04: // bound to a volume that does not exist
		case y < 0.06:
			pvc.DeletionTimestamp = &metav1.Time{}
			pvc.Finalizers = []string{"kubernetes.io/pvc-protection"}
			c.PersistentVolumes = append(c.PersistentVolumes, g.pv(pvName, pvc))
		default:
			c.PersistentVolumes = append(c.PersistentVolumes, g.pv(pvName, pvc))
		}
	}
	return pvc
}

// shapeLocalClaim varies what a claim asks of a static volume.
func (g *gen) shapeLocalClaim(pvc *v1.PersistentVolumeClaim) {
	pvc.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse(pick(g, []string{"5Gi", "10Gi", "50Gi"}))
	if g.chance(0.15) {
		pvc.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
	}
	if g.chance(0.1) {
		pvc.Spec.VolumeMode = ptr(v1.PersistentVolumeBlock)
	}
	if g.chance(0.15) {
		pvc.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": pick(g, []string{"fast", "slow"})}}
	}
}

// staticVolumes adds local volumes of localClass, each on one node or in
// one zone, mostly available, some taken or reserved for a claim.
func (g *gen) staticVolumes(c *Cluster, ns string) {
	reserved := map[string]bool{}
	for k := range 2 + g.n(5) {
		name := fmt.Sprintf("local-%d", k)
		pv := &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("pv-uid-" + name)},
			Spec: v1.PersistentVolumeSpec{
				// Sizes differ by volume: among equal ones the scheduler's
				// pick is arbitrary (map order), gpuscale's the first by name.
				Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse(fmt.Sprintf("%dGi", pick(g, []int{5, 10, 20, 100})+k))},
				AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				PersistentVolumeSource:        v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/disks/" + name}},
				StorageClassName:              localClass,
				PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			},
			Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
		}
		if g.chance(0.15) {
			pv.Spec.AccessModes = append(pv.Spec.AccessModes, v1.ReadWriteMany)
		}
		if g.chance(0.1) {
			pv.Spec.VolumeMode = ptr(v1.PersistentVolumeBlock)
		}
		if g.chance(0.3) {
			pv.Labels = map[string]string{"tier": pick(g, []string{"fast", "slow"})}
		}
		key, value := v1.LabelHostname, fmt.Sprintf("node-%d", g.n(len(c.Nodes)))
		if g.chance(0.3) {
			key, value = v1.LabelTopologyZone, pick(g, zones)
		}
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: []string{value}}}}}}}
		switch x := g.r.Float64(); {
		case x < 0.1:
			pv.Status.Phase = v1.VolumeReleased
		case x < 0.2: // reserved for one of the pending pod's claims, or another's
			claim := fmt.Sprintf("data-%d", g.n(3))
			if reserved[claim] {
				// Two volumes reserved for one claim: the scheduler takes
				// whichever its map yields first.
				break
			}
			reserved[claim] = true
			uid := types.UID("")
			if g.chance(0.3) {
				uid = types.UID("pvc-uid-" + ns + "-" + claim)
			}
			pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim, UID: uid}
		case x < 0.25:
			pv.DeletionTimestamp = &metav1.Time{}
			pv.Finalizers = []string{"kubernetes.io/pv-protection"}
		}
		c.PersistentVolumes = append(c.PersistentVolumes, pv)
	}
}

// ephemeralVolume adds a generic ephemeral volume whose claim the
// ephemeral volume controller has made: the pod's own (bound, or waiting
// for its first consumer), or rarely one of another pod. A claim not made
// yet is left out: gpuscale checks it by its template on purpose, where
// the scheduler waits.
func (g *gen) ephemeralVolume(c *Cluster, p *v1.Pod) {
	const vol = "scratch"
	class := pick(g, []string{wffcClass, zonalClass})
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: vol, VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
		VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: ptr(class),
			VolumeMode:       ptr(v1.PersistentVolumeFilesystem),
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		}},
	}}})
	pvc := newClaim(p.Name+"-"+vol, p.Namespace)
	pvc.Spec.StorageClassName = ptr(class)
	pvc.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("1Gi")
	owner, uid := p.Name, p.UID
	if g.chance(0.1) {
		owner, uid = "other", types.UID("pod-uid-other")
	}
	pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: owner, UID: uid, Controller: ptr(true)}}
	if g.chance(0.5) {
		pvName := "pv-" + vol
		pvc.Spec.VolumeName = pvName
		pvc.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
		pvc.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: pvc.Spec.AccessModes,
			Capacity: pvc.Spec.Resources.Requests.DeepCopy()}
		c.PersistentVolumes = append(c.PersistentVolumes, g.pv(pvName, pvc))
	}
	c.PersistentVolumeClaims = append(c.PersistentVolumeClaims, pvc)
}

// pv is the volume a claim is bound to: placed by zone or region labels
// (VolumeZone), by node affinity as CSI drivers place them
// (VolumeBinding), by both, or not at all.
func (g *gen) pv(name string, pvc *v1.PersistentVolumeClaim) *v1.PersistentVolume {
	l := map[string]string{}
	zone, other := pick(g, zones), pick(g, zones)
	switch g.n(9) {
	case 0:
		l[v1.LabelTopologyZone] = zone
	case 1:
		if other != zone { // multi-zone volumes join zones with "__"
			zone += "__" + other
		}
		l[v1.LabelTopologyZone] = zone
	case 2:
		l[v1.LabelFailureDomainBetaZone] = zone
	case 3:
		l[v1.LabelTopologyZone], l[v1.LabelTopologyRegion] = zone, regionOf(zone)
	case 4:
		l[v1.LabelTopologyRegion] = regionOf(zone)
	case 5:
		l[v1.LabelFailureDomainBetaRegion] = regionOf(zone)
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("pv-uid-" + name), Labels: l},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    pvc.Spec.Resources.Requests.DeepCopy(),
			AccessModes: pvc.Spec.AccessModes,
			PersistentVolumeSource: v1.PersistentVolumeSource{
				CSI: &v1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-" + name},
			},
			ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace,
				Name: pvc.Name, UID: pvc.UID, APIVersion: "v1"},
			StorageClassName:              *pvc.Spec.StorageClassName,
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound},
	}
	if g.chance(0.6) {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: g.volumeAffinity()}
	}
	return pv
}

// volumeAffinity draws a volume's required node affinity: mostly one zone
// under the GA or a CSI driver's key, sometimes several zones, a node, an
// exclusion, or two terms.
func (g *gen) volumeAffinity() *v1.NodeSelector {
	req := func() v1.NodeSelectorRequirement {
		switch x := g.r.Float64(); {
		case x < 0.4:
			return v1.NodeSelectorRequirement{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpIn, Values: []string{pick(g, zones)}}
		case x < 0.6:
			return v1.NodeSelectorRequirement{Key: CSIZoneKey, Operator: v1.NodeSelectorOpIn, Values: []string{pick(g, zones)}}
		case x < 0.7:
			return v1.NodeSelectorRequirement{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpIn, Values: distinct(g, zones)}
		case x < 0.8:
			return v1.NodeSelectorRequirement{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{fmt.Sprintf("node-%d", g.n(4))}}
		case x < 0.9:
			return v1.NodeSelectorRequirement{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpNotIn, Values: []string{pick(g, zones)}}
		}
		return v1.NodeSelectorRequirement{Key: RackKey, Operator: v1.NodeSelectorOpExists}
	}
	ns := &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{req()}}}}
	if g.chance(0.15) {
		ns.NodeSelectorTerms[0].MatchExpressions = append(ns.NodeSelectorTerms[0].MatchExpressions, req())
	}
	if g.chance(0.15) {
		ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{req()}})
	}
	return ns
}

// readWriteOncePod sometimes makes a claim ReadWriteOncePod and mounts it in
// a running pod (of the claim's namespace or not: only the same namespace
// counts).
func (g *gen) readWriteOncePod(c *Cluster, pvc *v1.PersistentVolumeClaim) {
	if !g.chance(0.2) {
		return
	}
	pvc.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}
	if pvc.Status.Phase == v1.ClaimBound {
		pvc.Status.AccessModes = pvc.Spec.AccessModes
	}
	for _, pv := range c.PersistentVolumes {
		if pv.Name == pvc.Spec.VolumeName {
			pv.Spec.AccessModes = pvc.Spec.AccessModes
		}
	}
	if len(c.Pods) == 0 || !g.chance(0.5) {
		return
	}
	user := pick(g, c.Pods)
	user.Spec.Volumes = append(user.Spec.Volumes, v1.Volume{Name: "shared-" + pvc.Name,
		VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}})
}

// addDisks gives some running pods and the pending pod in-tree disks
// (GCE PD, AWS EBS, iSCSI, RBD) drawn from a few, so that a node may mount
// the pending pod's disk already, read-only or not.
func (g *gen) addDisks(c *Cluster, pending *v1.Pod) {
	if !g.chance(0.15) {
		return
	}
	for _, p := range c.Pods {
		if g.chance(0.3) {
			p.Spec.Volumes = append(p.Spec.Volumes, g.disk())
		}
	}
	pending.Spec.Volumes = append(pending.Spec.Volumes, g.disk())
}

func (g *gen) disk() v1.Volume {
	ro := g.chance(0.4)
	var src v1.VolumeSource
	switch g.n(4) {
	case 0:
		src.GCEPersistentDisk = &v1.GCEPersistentDiskVolumeSource{PDName: pick(g, []string{"pd-1", "pd-2"}), ReadOnly: ro}
	case 1:
		src.AWSElasticBlockStore = &v1.AWSElasticBlockStoreVolumeSource{VolumeID: pick(g, []string{"vol-1", "vol-2"}), ReadOnly: ro}
	case 2:
		src.ISCSI = &v1.ISCSIVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: pick(g, []string{"iqn.2001-04.com.example:disk1", "iqn.2001-04.com.example:disk2"}),
			Lun: 0, ISCSIInterface: "default", ReadOnly: ro} // defaulted as the API server would
	default:
		src.RBD = &v1.RBDVolumeSource{CephMonitors: distinct(g, []string{"10.0.0.1:6789", "10.0.0.2:6789", "10.0.0.3:6789"}),
			RBDImage: pick(g, []string{"img-1", "img-2"}), RBDPool: "rbd", RadosUser: "admin", Keyring: "/etc/ceph/keyring", ReadOnly: ro}
	}
	return v1.Volume{Name: "disk", VolumeSource: src}
}
