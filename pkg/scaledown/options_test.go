package scaledown_test

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/limits"
	"github.com/gpuscale/gpuscale/pkg/scaledown"
)

func TestDefaultOptionsAreUpstreamDefaults(t *testing.T) {
	o := scaledown.DefaultOptions()
	want := scaledown.Options{
		UtilizationThreshold: 0.5, GPUUtilizationThreshold: 0.5,
		UnneededTime: 10 * time.Minute, UnreadyTime: 20 * time.Minute, UnreadyEnabled: true,
		DelayAfterAdd: 10 * time.Minute, DelayAfterDelete: 0, DelayAfterFailure: 3 * time.Minute,
		MaxScaleDownParallelism: 10, MaxDrainParallelism: 1, NonEmptyCandidatesCount: 30,
		SkipNodesWithLocalStorage: true, SkipNodesWithSystemPods: true, SkipNodesWithCustomControllerPods: true,
		ExpendablePodsPriorityCutoff: -10, DaemonSetEvictionForOccupiedNodes: true, BlockingSystemPodDisruptionTimeout: time.Hour,
		MaxGracefulTerminationSec: 600, MaxCloudProviderNodeDeletionTime: 5 * time.Minute, MaxBulkSoftTaintCount: 10,
		Limits: limits.Default(),
	}
	if o.Limits.Cores != want.Limits.Cores || o.Limits.MemoryGiB != want.Limits.MemoryGiB {
		t.Errorf("limits %+v, want %+v", o.Limits, want.Limits)
	}
	o.Limits, want.Limits = limits.Limits{}, limits.Limits{}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("defaults\n%+v\nwant\n%+v", o, want)
	}
	o = scaledown.DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Errorf("defaults must be valid: %v", err)
	}
}

func TestValidateNamesFieldFlagAndValue(t *testing.T) {
	cases := []struct {
		name string
		edit func(*scaledown.Options)
		want []string
	}{
		{"threshold above one", func(o *scaledown.Options) { o.UtilizationThreshold = 1.5 },
			[]string{"UtilizationThreshold", "--scale-down-utilization-threshold", "1.5"}},
		{"negative GPU threshold", func(o *scaledown.Options) { o.GPUUtilizationThreshold = -0.1 },
			[]string{"GPUUtilizationThreshold", "--scale-down-gpu-utilization-threshold", "-0.1"}},
		{"NaN threshold", func(o *scaledown.Options) { o.UtilizationThreshold = math.NaN() },
			[]string{"UtilizationThreshold", "NaN"}},
		{"negative unneeded time", func(o *scaledown.Options) { o.UnneededTime = -time.Second },
			[]string{"UnneededTime", "--scale-down-unneeded-time", "-1s"}},
		{"negative unready time", func(o *scaledown.Options) { o.UnreadyTime = -time.Minute },
			[]string{"UnreadyTime", "--scale-down-unready-time"}},
		{"negative delay after add", func(o *scaledown.Options) { o.DelayAfterAdd = -time.Minute },
			[]string{"DelayAfterAdd", "--scale-down-delay-after-add"}},
		{"negative delay after delete", func(o *scaledown.Options) { o.DelayAfterDelete = -time.Minute },
			[]string{"DelayAfterDelete", "--scale-down-delay-after-delete"}},
		{"negative delay after failure", func(o *scaledown.Options) { o.DelayAfterFailure = -time.Minute },
			[]string{"DelayAfterFailure", "--scale-down-delay-after-failure"}},
		{"negative system pod timeout", func(o *scaledown.Options) { o.BlockingSystemPodDisruptionTimeout = -time.Minute },
			[]string{"BlockingSystemPodDisruptionTimeout", "--blocking-system-pod-distruption-timeout", "-1m0s"}},
		{"negative min replica count", func(o *scaledown.Options) { o.MinReplicaCount = -1 },
			[]string{"MinReplicaCount", "--min-replica-count", "-1"}},
		{"negative parallelism", func(o *scaledown.Options) { o.MaxScaleDownParallelism = -1 },
			[]string{"MaxScaleDownParallelism", "--max-scale-down-parallelism", "-1"}},
		{"negative drain parallelism", func(o *scaledown.Options) { o.MaxDrainParallelism = -2 },
			[]string{"MaxDrainParallelism", "--max-drain-parallelism", "-2"}},
		{"negative graceful termination", func(o *scaledown.Options) { o.MaxGracefulTerminationSec = -5 },
			[]string{"MaxGracefulTerminationSec", "--max-graceful-termination-sec", "-5"}},
		{"negative deletion time", func(o *scaledown.Options) { o.MaxCloudProviderNodeDeletionTime = -time.Second },
			[]string{"MaxCloudProviderNodeDeletionTime", "--max-cloud-provider-node-deletion-time"}},
		{"negative soft taint count", func(o *scaledown.Options) { o.MaxBulkSoftTaintCount = -1 },
			[]string{"MaxBulkSoftTaintCount", "--max-bulk-soft-taint-count"}},
		{"cores minimum above maximum", func(o *scaledown.Options) { o.Limits.Cores = limits.Range{Min: 10, Max: 5} },
			[]string{"Limits.Cores", "--cores-total", "10:5"}},
		{"negative GPU minimum", func(o *scaledown.Options) { o.Limits.GPUs = map[string]limits.Range{"nvidia-l4": {Min: -1, Max: 4}} },
			[]string{"Limits.GPUs[nvidia-l4]", "--gpu-total", "-1:4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := scaledown.DefaultOptions()
			tc.edit(&o)
			err := o.Validate()
			if err == nil {
				t.Fatal("want an error")
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if _, err := scaledown.NewPlanner(o); err == nil {
				t.Error("NewPlanner must refuse invalid options")
			}
		})
	}
}

func TestValidateReportsEveryBadField(t *testing.T) {
	o := scaledown.DefaultOptions()
	o.UtilizationThreshold, o.MaxDrainParallelism = 2, -1
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "UtilizationThreshold") || !strings.Contains(err.Error(), "MaxDrainParallelism") {
		t.Errorf("error %v should name both bad fields", err)
	}
}

func TestValidateAcceptsEdges(t *testing.T) {
	o := scaledown.DefaultOptions()
	o.UtilizationThreshold, o.GPUUtilizationThreshold = 0, 1
	o.UnneededTime, o.MaxScaleDownParallelism, o.MaxDrainParallelism, o.NonEmptyCandidatesCount = 0, 0, 0, -1
	if err := o.Validate(); err != nil {
		t.Errorf("edge values should be valid: %v", err)
	}
}
