package dst

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// StepKind is what one step of a schedule does.
type StepKind int

// Step kinds.
const (
	// StepTick moves the virtual clock by Dur; kubelets end the pods
	// whose grace period is over.
	StepTick StepKind = iota
	// StepSchedule runs one scheduler cycle.
	StepSchedule
	// StepRegister has the Pick-th waiting instance's kubelet register.
	StepRegister
	// StepLoseKubelet makes the Pick-th waiting instance one that never
	// registers.
	StepLoseKubelet
	// StepAddWorkload creates a workload of Workload kind.
	StepAddWorkload
	// StepDeleteWorkload deletes the Pick-th workload created.
	StepDeleteWorkload
	// StepFinishPod ends the Pick-th running pod.
	StepFinishPod
	// StepProtectPod annotates the Pick-th running pod do-not-disrupt.
	StepProtectPod
	// StepFault arms Fault; an API fault on "nodes" targets the Pick-th
	// node.
	StepFault
	// StepKill kills the autoscaler process and starts a fresh one on the
	// same API server and cloud.
	StepKill
	// StepTakeover has a second replica take the Lease: the first one's
	// leader context ends and the new one starts acting at once.
	StepTakeover
	// StepHoldWatch holds back the watch events of Resource: the caches
	// lag the API server until StepReleaseWatch.
	StepHoldWatch
	// StepReleaseWatch delivers the events held back for Resource.
	StepReleaseWatch
	// StepKillAfterTaint kills the autoscaler process right after its
	// next write that leaves a node tainted ToBeDeleted (between the taint
	// and the drain), and starts a fresh one.
	StepKillAfterTaint
	// StepTakeoverWhileDraining has a second replica take the Lease once
	// the leader's next drain waits for a pod to terminate (when the
	// goroutines settle after it began to).
	StepTakeoverWhileDraining
)

var stepNames = [...]string{"Tick", "Schedule", "Register", "LoseKubelet", "AddWorkload", "DeleteWorkload",
	"FinishPod", "ProtectPod", "Fault", "Kill", "Takeover", "HoldWatch", "ReleaseWatch", "KillAfterTaint",
	"TakeoverWhileDraining"}

func (k StepKind) String() string { return stepNames[k] }

// Step is one step of a schedule.
type Step struct {
	Kind     StepKind
	Pick     int
	Dur      time.Duration
	Workload WorkloadKind
	Replicas int
	GPU      bool
	Fault    Fault
	// Resource is the watched resource of StepHoldWatch and
	// StepReleaseWatch.
	Resource string
}

func (s Step) String() string {
	switch s.Kind {
	case StepTick:
		return fmt.Sprintf("Tick %s", s.Dur)
	case StepAddWorkload:
		return fmt.Sprintf("AddWorkload %s x%d gpu=%v", s.Workload, s.Replicas, s.GPU)
	case StepFault:
		return fmt.Sprintf("Fault %s (pick %d)", s.Fault, s.Pick)
	case StepHoldWatch, StepReleaseWatch:
		return fmt.Sprintf("%s %s", s.Kind, s.Resource)
	case StepSchedule, StepKill, StepTakeover, StepKillAfterTaint, StepTakeoverWhileDraining:
		return s.Kind.String()
	}
	return fmt.Sprintf("%s pick %d", s.Kind, s.Pick)
}

// weights of the step kinds when drawn.
var stepWeights = [...]int{StepTick: 30, StepSchedule: 14, StepRegister: 12, StepLoseKubelet: 2,
	StepAddWorkload: 8, StepDeleteWorkload: 5, StepFinishPod: 10, StepProtectPod: 3, StepFault: 14, StepKill: 6,
	StepTakeover: 5, StepHoldWatch: 4, StepReleaseWatch: 4, StepKillAfterTaint: 3,
	StepTakeoverWhileDraining: 3}

// Generate draws a schedule of n steps from seed.
func Generate(seed uint64, n int) []Step {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	total := 0
	for _, w := range stepWeights {
		total += w
	}
	steps := make([]Step, 0, n)
	for range n {
		x := r.IntN(total)
		kind := StepKind(0)
		for k, w := range stepWeights {
			if x < w {
				kind = StepKind(k)
				break
			}
			x -= w
		}
		s := Step{Kind: kind, Pick: r.IntN(16)}
		switch kind {
		case StepTick:
			s.Dur = time.Duration(1+r.IntN(30)) * time.Second * 2
		case StepAddWorkload:
			// Half the workloads move freely, so that drains evict.
			s.Workload = WorkloadKind(r.IntN(2 * int(workloadKinds)))
			if s.Workload >= workloadKinds {
				s.Workload = movesFreely[int(s.Workload-workloadKinds)%len(movesFreely)]
			}
			s.Replicas = 1 + r.IntN(3)
			s.GPU = r.IntN(2) > 0
		case StepFault:
			s.Fault = drawFault(r)
		case StepHoldWatch, StepReleaseWatch:
			s.Resource = watchedResources[r.IntN(len(watchedResources))]
		}
		steps = append(steps, s)
	}
	return steps
}

var (
	// movesFreely are the workload kinds whose pods a drain may evict.
	movesFreely      = [...]WorkloadKind{WorkloadPlain, WorkloadGraceful, WorkloadSlowStop}
	watchedResources = [...]string{"pods", "nodes"}
	apiTargets       = [...]string{"nodes", "nodes", "pods/eviction", "configmaps"}
	cloudTargets     = [...]string{"IncreaseSize", "DeleteNodes", "DecreaseTargetSize", "Refresh"}
)

func drawFault(r *rand.Rand) Fault {
	if r.IntN(2) == 0 {
		return Fault{Kind: FaultKind(r.IntN(4)), Target: apiTargets[r.IntN(len(apiTargets))], Count: 1 + r.IntN(3)}
	}
	f := Fault{Kind: FaultCloudFail + FaultKind(r.IntN(4)), Target: cloudTargets[r.IntN(len(cloudTargets))],
		Count: 1 + r.IntN(2)}
	if f.Kind == FaultCloudLate {
		f.Delay = time.Duration(10+r.IntN(170)) * time.Second
	}
	return f
}
