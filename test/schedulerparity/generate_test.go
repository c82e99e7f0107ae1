package schedulerparity

import (
	"math/rand"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	core "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	storage "k8s.io/kubernetes/pkg/apis/storage"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	storagevalidation "k8s.io/kubernetes/pkg/apis/storage/validation"

	resourceapi "k8s.io/api/resource/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	resourceinternal "k8s.io/kubernetes/pkg/apis/resource"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	resourcevalidation "k8s.io/kubernetes/pkg/apis/resource/validation"
	kubefeatures "k8s.io/kubernetes/pkg/features"
)

func TestGenerateIsDeterministic(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		c1, p1 := Generate(rand.New(rand.NewSource(seed)))
		c2, p2 := Generate(rand.New(rand.NewSource(seed)))
		if !apiequality.Semantic.DeepEqual(c1, c2) || !apiequality.Semantic.DeepEqual(p1, p2) {
			t.Fatalf("seed %d: two runs differ", seed)
		}
	}
}

// internal runs the API server's admission path up to validation: default
// a copy of the v1 object, then convert it to the internal type.
func internal(t *testing.T, in, out runtime.Object) {
	t.Helper()
	cp := in.DeepCopyObject()
	legacyscheme.Scheme.Default(cp)
	if err := legacyscheme.Scheme.Convert(cp, out, nil); err != nil {
		t.Fatal(err)
	}
}

// TestGeneratedObjectsAreValid checks that the generator only produces
// objects the API server would accept, and that defaulting would not change
// the pod fields the filters read (the generator does not default).
func TestGeneratedObjectsAreValid(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		c, pending := Generate(rand.New(rand.NewSource(seed)))
		var errs field.ErrorList
		for _, p := range append([]*v1.Pod{pending}, c.Pods...) {
			var ip core.Pod
			internal(t, p, &ip)
			errs = append(errs, corevalidation.ValidatePodCreate(&ip, podutil.GetValidationOptionsFromPodSpecAndMeta(&ip.Spec, nil, &ip.ObjectMeta, nil))...)
			d := p.DeepCopy()
			legacyscheme.Scheme.Default(d)
			if !apiequality.Semantic.DeepEqual(schedulingView(p), schedulingView(d)) {
				t.Errorf("seed %d: defaulting changes pod %s:\n%+v\n%+v", seed, p.Name, schedulingView(p), schedulingView(d))
			}
		}
		for _, n := range c.Nodes {
			var in core.Node
			internal(t, n, &in)
			errs = append(errs, corevalidation.ValidateNode(&in)...)
		}
		for _, ns := range c.Namespaces {
			var in core.Namespace
			internal(t, ns, &in)
			errs = append(errs, corevalidation.ValidateNamespace(&in)...)
		}
		for _, pv := range c.PersistentVolumes {
			var in core.PersistentVolume
			internal(t, pv, &in)
			errs = append(errs, corevalidation.ValidatePersistentVolume(&in, corevalidation.ValidationOptionsForPersistentVolume(&in, nil))...)
		}
		for _, pvc := range c.PersistentVolumeClaims {
			var in core.PersistentVolumeClaim
			internal(t, pvc, &in)
			errs = append(errs, corevalidation.ValidatePersistentVolumeClaim(&in, corevalidation.ValidationOptionsForPersistentVolumeClaim(&in, nil))...)
		}
		for _, sc := range c.StorageClasses {
			var in storage.StorageClass
			internal(t, sc, &in)
			errs = append(errs, storagevalidation.ValidateStorageClass(&in)...)
		}
		errs = append(errs, validateDRA(t, c)...)
		if len(errs) > 0 {
			t.Fatalf("seed %d: invalid objects: %v", seed, errs.ToAggregate())
		}
	}
}

// TestGeneratedPartitionableDevicesAreValid is the same for the devices of
// the partitionable runs, with the gate on as the API server would need.
func TestGeneratedPartitionableDevicesAreValid(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, kubefeatures.DRAPartitionableDevices, true)
	for seed := int64(0); seed < 200; seed++ {
		c, _ := GenerateWith(rand.New(rand.NewSource(seed)), Options{PartitionableDevices: true})
		if errs := validateDRA(t, c); len(errs) > 0 {
			t.Fatalf("seed %d: invalid objects: %v", seed, errs.ToAggregate())
		}
	}
}

// validateDRA validates the DRA objects as the API server does on create,
// and the claims' allocations and reservations as a status update.
func validateDRA(t *testing.T, c *Cluster) field.ErrorList {
	t.Helper()
	var errs field.ErrorList
	for _, dc := range c.DeviceClasses {
		var in resourceinternal.DeviceClass
		internal(t, dc, &in)
		errs = append(errs, resourcevalidation.ValidateDeviceClass(&in)...)
	}
	for _, sl := range c.ResourceSlices {
		var in resourceinternal.ResourceSlice
		internal(t, sl, &in)
		errs = append(errs, resourcevalidation.ValidateResourceSlice(&in)...)
	}
	for _, tm := range c.ResourceClaimTemplates {
		var in resourceinternal.ResourceClaimTemplate
		internal(t, tm, &in)
		errs = append(errs, resourcevalidation.ValidateResourceClaimTemplate(&in)...)
	}
	for _, rc := range c.ResourceClaims {
		created := rc.DeepCopy()
		created.Status = resourceapi.ResourceClaimStatus{}
		created.DeletionTimestamp = nil
		created.ResourceVersion = "1" // a status update names the version it updates
		var in, old resourceinternal.ResourceClaim
		internal(t, created, &old)
		errs = append(errs, resourcevalidation.ValidateResourceClaim(&old)...)
		withStatus := created.DeepCopy()
		withStatus.Status = rc.Status
		internal(t, withStatus, &in)
		errs = append(errs, resourcevalidation.ValidateResourceClaimStatusUpdate(&in, &old)...)
	}
	return errs
}

// schedulingView is the part of a pod the nine filters look at.
func schedulingView(p *v1.Pod) any {
	var ctrs [][]any
	for _, c := range append(append([]v1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		ctrs = append(ctrs, []any{c.Resources.Requests, c.Ports, c.RestartPolicy})
	}
	s := p.Spec
	return []any{ctrs, s.Overhead, s.Tolerations, s.NodeSelector, s.Affinity, s.TopologySpreadConstraints, s.Volumes, s.NodeName}
}
