package autoscaler_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/capacitybuffer"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

func injection(on bool) func(*autoscaler.Options) {
	return func(o *autoscaler.Options) { o.CapacityBuffers.PodInjectionEnabled = on }
}

// gpuBuffer holds n chunks of one GPU each.
func gpuBuffer(n int32) capacitybuffer.Buffer {
	shape := builder.Pod("shape").CPU("4").GPU(1).Toleration("nvidia.com/gpu").Build()
	return capacitybuffer.Buffer{Namespace: "serving", Name: "warm", Replicas: n,
		Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "llm"}}, Spec: shape.Spec}}
}

// cpuAndGPUGroups has an empty CPU group and an empty GPU group.
func cpuAndGPUGroups(t *testing.T) *snapshot.Snapshot {
	s := snapshot.New()
	setGroup(t, s, "cpu", 0, builder.Node("cpu-t").CPU("16").Memory("64Gi").Build())
	setGroup(t, s, "gpu", 0, gpuTemplate())
	return s
}

func readyGPUNode(t *testing.T, s *snapshot.Snapshot, name string, created time.Time) {
	t.Helper()
	n := builder.Node(name).CPU("32").Memory("128Gi").GPU(1).Taint("nvidia.com/gpu", "present", v1.TaintEffectNoSchedule).Build()
	n.CreationTimestamp = metav1.NewTime(created)
	n.Spec.ProviderID = "test://" + name
	if err := s.AddNodeInGroup(n, "gpu"); err != nil {
		t.Fatal(err)
	}
}

// A buffer of one GPU chunk grows the GPU group with no real pod pending,
// and its placeholder is reported as the buffer's, never as a pending or
// triggering pod.
func TestBufferTriggersScaleUpOfTheGroupItFits(t *testing.T) {
	for _, on := range []bool{true, false} {
		a := newAutoscaler(t, injection(on))
		s := cpuAndGPUGroups(t)
		plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s, CapacityBuffers: []capacitybuffer.Buffer{gpuBuffer(1)}})
		want := ""
		if on {
			want = "scale-up gpu+1"
		}
		if got := summary(plan); got != want {
			t.Errorf("pod injection %v: plan %q, want %q", on, got, want)
		}
		if !on {
			continue
		}
		st := plan.Status
		if len(st.Triggered) != 0 || len(st.Pending) != 0 {
			t.Errorf("placeholders counted as real pods: triggered %v, pending %v", st.Triggered, st.Pending)
		}
		if len(st.Buffers) != 1 || st.Buffers[0].ScaleUp != 1 || st.Buffers[0].Replicas != 1 {
			t.Errorf("buffer status %+v, want 1 chunk the scale-up is for", st.Buffers)
		}
	}
}

// A GPU node with nothing on it but the buffer's room is never removed;
// without the buffer it goes after the unneeded time.
func TestNodeHoldingOnlyBufferRoomIsKept(t *testing.T) {
	for _, withBuffer := range []bool{true, false} {
		a := newAutoscaler(t, injection(true))
		s := cpuAndGPUGroups(t)
		setTarget(t, s, "gpu", 1)
		readyGPUNode(t, s, "gpu-1", t0.Add(-time.Hour))
		var bufs []capacitybuffer.Buffer
		if withBuffer {
			bufs = []capacitybuffer.Buffer{gpuBuffer(1)}
		}
		removed := false
		var last autoscaler.Plan
		for m := 0; m <= 30; m++ {
			last = step(t, a, autoscaler.Input{Now: t0.Add(time.Duration(m) * time.Minute), Snapshot: s, CapacityBuffers: bufs})
			if got := summary(last); got != "" && got != "soft-taint gpu-1" && got != "soft-untaint gpu-1" {
				removed = removed || only(last, "remove") != ""
				if only(last, "scale-up") != "" {
					t.Fatalf("buffer %v: scaled up although the node has the buffer's room: %q", withBuffer, got)
				}
			}
		}
		if removed == withBuffer {
			t.Errorf("buffer %v: node removed %v", withBuffer, removed)
		}
		if !withBuffer {
			continue
		}
		b := last.Status.Buffers
		if len(b) != 1 || b[0].Fit != 1 || len(b[0].Nodes) != 1 || b[0].Nodes[0] != "gpu-1" {
			t.Errorf("buffer status %+v, want its chunk on gpu-1", b)
		}
		held := false
		for _, n := range last.Status.Nodes {
			if n.Name == "gpu-1" && len(n.Buffers) == 1 && n.Buffers[0] == "serving/warm" {
				held = true
			}
		}
		if !held {
			t.Errorf("node statuses %+v do not say gpu-1 holds room for serving/warm", last.Status.Nodes)
		}
	}
}

// A real pod takes the room a buffer holds: it is expected on the node,
// and the buffer, left without room, grows the group again.
func TestRealPodTakesTheBuffersRoom(t *testing.T) {
	a := newAutoscaler(t, injection(true))
	s := cpuAndGPUGroups(t)
	setTarget(t, s, "gpu", 1)
	readyGPUNode(t, s, "gpu-1", t0.Add(-time.Hour))
	real := owned(builder.Pod("llm-0").Namespace("serving").CPU("4").GPU(1).Toleration("nvidia.com/gpu").Build())
	// A real pod of a lower priority than any default still goes first.
	prio := int32(-5)
	real.Spec.Priority = &prio
	real.CreationTimestamp = metav1.NewTime(t0.Add(-time.Minute))
	plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s, Pending: []*v1.Pod{real},
		CapacityBuffers: []capacitybuffer.Buffer{gpuBuffer(1)}})
	if got := only(plan, "scale-up"); got != "scale-up gpu+1" {
		t.Fatalf("scale-ups %q, want gpu+1 for the buffer the real pod displaced", got)
	}
	st := plan.Status
	if len(st.Triggered) != 0 || len(st.Pending) != 0 {
		t.Errorf("the real pod should fit gpu-1: triggered %v, pending %v", st.Triggered, st.Pending)
	}
	if len(st.Buffers) != 1 || st.Buffers[0].ScaleUp != 1 || st.Buffers[0].Fit != 0 {
		t.Errorf("buffer status %+v, want its chunk on the new node", st.Buffers)
	}
}

// A buffer whose chunk finds no room (its group is at its maximum) is room
// wished for, not a pod waiting: it holds consolidation back no more than
// it shows as a pending pod.
func TestUnplacedBufferDoesNotHoldConsolidation(t *testing.T) {
	a := newAutoscaler(t, injection(true), func(o *autoscaler.Options) { o.Consolidation.Enabled = true })
	s := snapshot.New()
	if err := s.SetNodeGroup(builder.NodeGroup("gpu").Max(1).Target(1).Template(gpuTemplate()).Build()); err != nil {
		t.Fatal(err)
	}
	readyGPUNode(t, s, "gpu-1", t0.Add(-time.Hour))
	if err := s.AddPod(owned(builder.Pod("llm-0").CPU("4").GPU(1).Toleration("nvidia.com/gpu").OnNode("gpu-1").Build())); err != nil {
		t.Fatal(err)
	}
	plan := step(t, a, autoscaler.Input{Now: t0, Snapshot: s, CapacityBuffers: []capacitybuffer.Buffer{gpuBuffer(1)}})
	if b := plan.Status.Buffers; len(b) != 1 || b[0].NoRoom != 1 || b[0].Reason != "MaxNodeGroupSizeReached" {
		t.Fatalf("buffer status %+v, want its chunk without room at the group's maximum", b)
	}
	if c := plan.Status.Consolidation; c == nil || c.Held == "PodsWaitForCapacity" {
		t.Errorf("consolidation %+v: held by a placeholder", c)
	}
}
