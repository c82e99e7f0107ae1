package engine_test

import (
	"strings"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/sim/scenario"
)

// volumeScenario: a cheap group in zone b and a dearer one in zone a; a
// Job whose pod mounts a claim bound to a volume pinned to zone a.
const volumeScenario = `
name: zonal-volume
nodeGroups:
- name: gpu-a
  maxSize: 2
  pricePerHour: 3
  zone: us-east-1a
  capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1"}
- name: gpu-b
  maxSize: 2
  pricePerHour: 1
  zone: us-east-1b
  capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1"}
autoscaler:
  expander: price
persistentVolumes:
- metadata: {name: ckpt-pv}
  spec:
    capacity: {storage: 100Gi}
    accessModes: [ReadWriteOnce]
    nodeAffinity:
      required:
        nodeSelectorTerms:
        - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]
persistentVolumeClaims:
- metadata: {name: ckpt}
  spec: {volumeName: ckpt-pv, accessModes: [ReadWriteOnce], resources: {requests: {storage: 100Gi}}}
workloads:
- name: train
  pod:
    requests: {cpu: "2", memory: 8Gi, nvidia.com/gpu: "1"}
    volumes: [{name: ckpt, persistentVolumeClaim: {claimName: ckpt}}]
  jobs: [{at: 1m, duration: 1h}]
`

// The pod's volume is in zone a: the simulator buys the zone-a node, not
// the cheaper zone-b one, and the Job runs.
func TestSimulatorFollowsVolumeZone(t *testing.T) {
	res := run(t, parse(t, volumeScenario))
	if res.Finished != 1 || res.Unscheduled != 0 {
		t.Fatalf("%d pods finished, %d never scheduled; want the Job run", res.Finished, res.Unscheduled)
	}
	for _, g := range res.Groups {
		if g.ID == "gpu-b" && g.Added > 0 {
			t.Errorf("gpu-b got %d nodes for a pod whose volume is in zone a", g.Added)
		}
	}
}

// A claim naming a volume the scenario does not have, or a pod mounting a
// claim it does not have, is refused naming the field.
func TestScenarioStorageReferences(t *testing.T) {
	bad := strings.Replace(volumeScenario, "volumeName: ckpt-pv", "volumeName: gone", 1)
	bad = strings.Replace(bad, "claimName: ckpt}", "claimName: other}", 1)
	_, err := scenario.Parse([]byte(bad))
	for _, want := range []string{`persistentVolumeClaims[0].spec.volumeName: no persistentVolumes entry is named "gone"`,
		"workloads[0].pod.volumes[0].persistentVolumeClaim.claimName: no persistentVolumeClaims entry is named default/other"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to contain %q", err, want)
		}
	}
}
