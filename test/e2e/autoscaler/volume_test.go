package autoscaler_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider/kwok"
	"github.com/gpuscale/gpuscale/test/e2e/cluster"
)

// zonalKwokConfig: GPU groups in two zones, zone b cheaper and kept at one
// node by its min size (room for the pod, as far as resources go).
func zonalKwokConfig(t *testing.T) *kwok.Config {
	t.Helper()
	cfg, err := kwok.ParseConfig([]byte(`
provisioningDelay: 1s
devicePluginDelay: 0s
nodeGroups:
- name: gpu-a
  minSize: 0
  maxSize: 2
  instanceType: g5.xlarge
  pricePerHour: 2.0
  zone: us-east-1a
  template:
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    capacity: {cpu: "4", memory: 16Gi, pods: "110", nvidia.com/gpu: "1"}
- name: gpu-b
  minSize: 1
  maxSize: 2
  instanceType: g5.xlarge
  pricePerHour: 1.0
  zone: us-east-1b
  template:
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    capacity: {cpu: "4", memory: 16Gi, pods: "110", nvidia.com/gpu: "1"}
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// zonalVolume makes a volume pinned to zone by node affinity (as zonal CSI
// drivers provision them) and the claim a StatefulSet's first replica
// uses, pre-bound to it; the PersistentVolume controller completes the
// binding.
func zonalVolume(t *testing.T, c kubernetes.Interface, claim, zone string) {
	t.Helper()
	ctx := context.Background()
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + claim},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			StorageClassName:              "manual",
			PersistentVolumeSource:        v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/" + claim}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpIn, Values: []string{zone}}},
			}}}},
		},
	}
	if _, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	class := "manual"
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: "default"},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: &class,
			VolumeName:       pv.Name,
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
	if _, err := c.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the claim to be bound", func() bool {
		got, err := c.CoreV1().PersistentVolumeClaims("default").Get(ctx, claim, metav1.GetOptions{})
		return err == nil && got.Status.Phase == v1.ClaimBound
	})
}

// statefulSet is one GPU replica whose volume claim template "data" gives
// the claim data-<name>-0.
func statefulSet(name string) *appsv1.StatefulSet {
	one := int32(1)
	lbl := map[string]string{"app": name}
	gpu := resource.MustParse("1")
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: v1.PodSpec{
				Containers: []v1.Container{{Name: "main", Image: "busybox", Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), "nvidia.com/gpu": gpu},
					Limits:   v1.ResourceList{"nvidia.com/gpu": gpu},
				}, VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				Tolerations: []v1.Toleration{{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
			}},
			VolumeClaimTemplates: []v1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: v1.PersistentVolumeClaimSpec{
					AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
					StorageClassName: ptrTo("manual"),
					Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")}},
				},
			}},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// zonalGPUNode registers a one-GPU node of group in zone, as if scaled up
// earlier.
func zonalGPUNode(t *testing.T, c kubernetes.Interface, name, group, zone string) {
	t.Helper()
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi"),
		v1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("1")}
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{kwok.LabelNodeGroup: group, v1.LabelHostname: name, v1.LabelTopologyZone: zone},
			Annotations: map[string]string{kwok.AnnotationKwokNode: kwok.AnnotationKwokNodeValue}},
		Spec:   v1.NodeSpec{Taints: []v1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{Capacity: rl, Allocatable: rl},
	}
	if _, err := c.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A StatefulSet replica whose volume is pinned to zone a: the autoscaler
// scales zone a's group although zone b's is cheaper and has an empty node,
// the pod runs there, and neither scale-down (the zone-a node is underused,
// the zone-b node has room) nor consolidation (zone b is half the price)
// ever removes or replaces the zone-a node under it.
func TestStatefulSetFollowsItsVolumeZone(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	zonalGPUNode(t, c.Client, "gpu-b-0", "gpu-b", "us-east-1b")
	zonalVolume(t, c.Client, "data-cache-0", "us-east-1a")
	opts := fastOptions()
	opts.Autoscaler.Consolidation.Enabled = true
	opts.Autoscaler.Consolidation.StableTime = time.Second
	opts.Autoscaler.Consolidation.Budgets = nil
	a := c.StartAutoscaler(t, zonalKwokConfig(t), opts)
	defer a.Stop()
	ctx := context.Background()
	if _, err := c.Client.AppsV1().StatefulSets("default").Create(ctx, statefulSet("cache"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "the replica to run", func() bool { return runningPods(t, c.Client, "cache") == 1 })
	pod, err := c.Client.CoreV1().Pods("default").Get(ctx, "cache-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node, err := c.Client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if zone := node.Labels[v1.LabelTopologyZone]; zone != "us-east-1a" {
		t.Fatalf("cache-0 runs on %s in zone %q, want us-east-1a", node.Name, zone)
	}
	if n := len(groupNodes(t, c.Client, "gpu-b")); n != 1 {
		t.Errorf("gpu-b has %d nodes, want its min size 1: nothing in zone b helps the pod", n)
	}
	// Well past the unneeded time: the zone-a node stays, the pod with it.
	zoneA := func() int { return len(groupNodes(t, c.Client, "gpu-a")) }
	if low := minDuring(15*time.Second, zoneA); low != 1 {
		t.Fatalf("the zone-a node was removed (gpu-a went down to %d nodes) though its pod cannot run in zone b", low)
	}
	if runningPods(t, c.Client, "cache") != 1 {
		t.Fatal("cache-0 no longer runs")
	}
	if n := len(groupNodes(t, c.Client, "gpu-b")); n != 1 {
		t.Errorf("gpu-b has %d nodes: consolidation must not launch a zone-b replacement the pod cannot use", n)
	}
}
