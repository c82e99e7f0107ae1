package drain_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

func TestRuleLocalStorage(t *testing.T) {
	safeVols := func(v string) func(*v1.Pod) { return annotated(drain.AnnotationSafeToEvictLocalVolumes, v) }
	runRuleCases(t, drain.RuleLocalStorage{}, []ruleCase{
		{name: "emptyDir on disk blocks", pod: podOf("cache", withVolume(emptyDir("scratch", ""))),
			want: drain.Block, code: drain.CodeLocalStorage, inMessage: []string{`"scratch"`, drain.AnnotationSafeToEvictLocalVolumes}},
		{name: "hostPath blocks", pod: podOf("logs", withVolume(hostPath("varlog"))), want: drain.Block, code: drain.CodeLocalStorage},
		{name: "memory-backed emptyDir does not block", pod: podOf("shm", withVolume(emptyDir("dshm", v1.StorageMediumMemory))),
			want: drain.Undecided},
		{name: "volume listed as safe does not block", pod: podOf("cache", withVolume(emptyDir("scratch", "")), safeVols("scratch")),
			want: drain.Undecided},
		{name: "every local volume must be listed", pod: podOf("cache", withVolume(emptyDir("a", "")), withVolume(hostPath("b")), safeVols("a")),
			want: drain.Block, code: drain.CodeLocalStorage, inMessage: []string{`"b"`}},
		{name: "list with several names and spaces covers all", pod: podOf("cache", withVolume(emptyDir("a", "")), withVolume(hostPath("b")), safeVols("a, b")),
			want: drain.Undecided},
		{name: "a name that only prefixes the volume does not count", pod: podOf("cache", withVolume(emptyDir("scratch", "")), safeVols("scr")),
			want: drain.Block, code: drain.CodeLocalStorage},
		{name: "safe-to-evict true overrides local storage", pod: podOf("cache", withVolume(hostPath("data")), annotated(drain.AnnotationSafeToEvict, "true")),
			want: drain.Undecided},
		{name: "claim volumes are not local storage", pod: podOf("db", withVolume(v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}})), want: drain.Undecided},
		{name: "pod without volumes is left to later rules", pod: podOf("web"), want: drain.Undecided},
	})
}
