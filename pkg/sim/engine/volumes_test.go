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

// attachLimitScenario: a group whose nodes attach one ebs.csi.aws.com
// volume each (volumeLimits), and three Job pods that each mount a volume
// of their own (a generic ephemeral volume) and would share one node.
const attachLimitScenario = `
name: attach-limits
nodeGroups:
- name: pool
  maxSize: 5
  pricePerHour: 1
  capacity: {cpu: "8", memory: 32Gi}
  volumeLimits: {ebs.csi.aws.com: 1}
storageClasses:
- metadata: {name: gp3}
  provisioner: ebs.csi.aws.com
  volumeBindingMode: WaitForFirstConsumer
workloads:
- name: etl
  pod:
    requests: {cpu: "1", memory: 1Gi}
    volumes:
    - name: scratch
      ephemeral:
        volumeClaimTemplate:
          spec: {storageClassName: gp3, accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
  jobs: [{at: 1m, count: 3, duration: 30m}]
`

// Each node attaches one volume: the three pods run on three nodes. The
// group starts from zero, so the first node has no sibling to take the
// limit from; once it registers its CSINode, the rest follow.
func TestSimulatorFollowsAttachLimits(t *testing.T) {
	for _, limits := range []string{"", "  volumeLimits: {ebs.csi.aws.com: 1}\n"} {
		yaml := strings.Replace(attachLimitScenario, "  volumeLimits: {ebs.csi.aws.com: 1}\n", limits, 1)
		res := run(t, parse(t, yaml))
		if res.Finished != 3 || res.Unscheduled != 0 {
			t.Fatalf("limits %q: %d pods finished, %d never scheduled; want the 3 Jobs run", limits, res.Finished, res.Unscheduled)
		}
		want := 1
		if limits != "" {
			want = 3
		}
		if got := res.Groups[0].PeakNodes; got != want {
			t.Errorf("limits %q: peak %d nodes, want %d", limits, got, want)
		}
	}
}

func TestScenarioRefusesANegativeVolumeLimit(t *testing.T) {
	yaml := strings.Replace(attachLimitScenario, "ebs.csi.aws.com: 1}", "ebs.csi.aws.com: -1}", 1)
	_, err := scenario.Parse([]byte(yaml))
	if err == nil || !strings.Contains(err.Error(), "nodeGroups[0].volumeLimits[ebs.csi.aws.com]") || !strings.Contains(err.Error(), "-1") {
		t.Fatalf("error %v, want one naming nodeGroups[0].volumeLimits[ebs.csi.aws.com] and -1", err)
	}
}
