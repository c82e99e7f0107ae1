package dst

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/gpuscale/gpuscale/pkg/builder"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
)

// The scheduler, kubelet and user models: they change the store directly,
// as the components they stand for would.

// WorkloadKind is what a user creates.
type WorkloadKind int

// Workload kinds; each but WorkloadPlain carries one reason its pods may
// not move, or a way they move slowly.
const (
	WorkloadPlain WorkloadKind = iota
	// WorkloadBudget has a PodDisruptionBudget that allows no eviction.
	WorkloadBudget
	// WorkloadDoNotDisrupt pods are annotated do-not-disrupt.
	WorkloadDoNotDisrupt
	// WorkloadNotSafeToEvict pods are annotated safe-to-evict=false.
	WorkloadNotSafeToEvict
	// WorkloadLocalStorage pods mount an emptyDir.
	WorkloadLocalStorage
	// WorkloadUnreplicated is one pod with no controller.
	WorkloadUnreplicated
	// WorkloadGraceful pods take 60s to terminate once evicted.
	WorkloadGraceful
	// WorkloadSlowStop pods take 4 minutes to terminate (a checkpoint
	// written on the way out): a drain waits for them through several
	// steps, and one deleted by its owner stays on its node as long.
	WorkloadSlowStop
	workloadKinds
)

var workloadNames = [...]string{"plain", "budget", "do-not-disrupt", "not-safe-to-evict", "local-storage",
	"unreplicated", "graceful", "slow-stop"}

func (k WorkloadKind) String() string { return workloadNames[k] }

// addWorkload creates a ReplicaSet of replicas pods (one bare pod when
// unreplicated), each asking for one GPU when gpu is set, else one CPU.
func (w *World) addWorkload(name string, kind WorkloadKind, replicas int, gpu bool) {
	b := builder.Pod("tmpl").Label("app", name)
	if gpu {
		b = b.CPU("1").GPU(1)
	} else {
		b = b.CPU("1")
	}
	tmpl := b.Build()
	tmpl.Status.Phase = v1.PodPending
	switch kind {
	case WorkloadDoNotDisrupt:
		tmpl.Annotations = map[string]string{drain.AnnotationDoNotDisrupt: "true"}
	case WorkloadNotSafeToEvict:
		tmpl.Annotations = map[string]string{drain.AnnotationSafeToEvict: "false"}
	case WorkloadLocalStorage:
		tmpl.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	case WorkloadGraceful:
		tmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
	case WorkloadSlowStop:
		tmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](240)
	}
	if kind == WorkloadUnreplicated {
		_ = w.store.Tracker().Add(freshPod(tmpl, name+"-0"))
		return
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-rs-" + name)},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
	_ = w.store.Tracker().Add(rs)
	tmpl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name,
		UID: rs.UID, Controller: ptr.To(true)}}
	for i := range replicas {
		_ = w.store.Tracker().Add(freshPod(tmpl, fmt.Sprintf("%s-%d", name, i)))
	}
	if kind == WorkloadBudget {
		min := intstr.FromInt32(int32(replicas))
		_ = w.store.Tracker().Add(&policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}})
	}
}

// deleteWorkload removes a workload with its pods, as a user would
// (the pods' own end: not the autoscaler's doing).
func (w *World) deleteWorkload(name string) {
	_ = w.store.Tracker().Delete(rsResource, "default", name)
	_ = w.store.Tracker().Delete(pdbsResource, "default", name)
	for _, p := range w.pods() {
		if p.Labels["app"] == name {
			w.deletePod(p)
		}
	}
}

// deletePod deletes a pod as the API server does: one with a grace period
// that runs on a node terminates first (endTerminations ends it).
func (w *World) deletePod(p *v1.Pod) {
	if p.DeletionTimestamp != nil {
		return
	}
	if grace := podGrace(p); grace > 0 && p.Spec.NodeName != "" {
		now := metav1.NewTime(w.clock.Now())
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
		_ = w.store.Tracker().Update(podsResource, p, p.Namespace)
		return
	}
	_ = w.store.Tracker().Delete(podsResource, p.Namespace, p.Name)
}

// finishPod ends the pick-th running pod (a batch job completing); its
// ReplicaSet wants one replica fewer.
func (w *World) finishPod(pick int) string {
	running := w.runningPods()
	if len(running) == 0 {
		return ""
	}
	p := running[pick%len(running)]
	w.deletePod(p)
	if ref := metav1.GetControllerOf(p); ref != nil {
		if obj, err := w.store.Tracker().Get(rsResource, p.Namespace, ref.Name); err == nil {
			rs := obj.(*appsv1.ReplicaSet)
			rs.Spec.Replicas = ptr.To(max(0, *rs.Spec.Replicas-1))
			_ = w.store.Tracker().Update(rsResource, rs, rs.Namespace)
		}
	}
	return podKey(p)
}

// protectPod annotates the pick-th running pod do-not-disrupt, as a user
// would while a removal is under way.
func (w *World) protectPod(pick int) string {
	running := w.runningPods()
	if len(running) == 0 {
		return ""
	}
	p := running[pick%len(running)]
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[drain.AnnotationDoNotDisrupt] = "true"
	_ = w.store.Tracker().Update(podsResource, p, p.Namespace)
	return podKey(p)
}

func (w *World) runningPods() []*v1.Pod {
	var out []*v1.Pod
	for _, p := range w.pods() {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// unboundPods are the pods waiting for a node.
func (w *World) unboundPods() []*v1.Pod {
	var out []*v1.Pod
	for _, p := range w.pods() {
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// schedule is one scheduler cycle: each waiting pod, in name order, is
// bound to the first node by name that is ready, untainted and has room;
// one that fits nowhere is marked unschedulable (what the autoscaler
// reads as pending).
func (w *World) schedule() {
	nodes := w.nodes()
	used := map[string]v1.ResourceList{}
	for _, p := range w.pods() {
		if p.Spec.NodeName != "" {
			addRequests(used, p.Spec.NodeName, p)
		}
	}
	for _, p := range w.unboundPods() {
		node, room := "", -1.0
		for _, n := range nodes {
			if !schedulable(n) || !fits(n, used[n.Name], p) {
				continue
			}
			if !w.spread {
				node = n.Name
				break
			}
			u := used[n.Name]
			alloc := n.Status.Allocatable.Cpu().MilliValue()
			free := float64(alloc-u.Cpu().MilliValue()) / float64(alloc)
			if free > room {
				node, room = n.Name, free
			}
		}
		if node == "" {
			if !markedUnschedulable(p) {
				p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse,
					Reason: v1.PodReasonUnschedulable, LastTransitionTime: metav1.NewTime(w.clock.Now())}}
				_ = w.store.Tracker().Update(podsResource, p, p.Namespace)
			}
			continue
		}
		p.Spec.NodeName = node
		p.Status.Phase = v1.PodRunning
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}
		_ = w.store.Tracker().Update(podsResource, p, p.Namespace)
		addRequests(used, node, p)
	}
}

func markedUnschedulable(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

func schedulable(n *v1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func addRequests(used map[string]v1.ResourceList, node string, p *v1.Pod) {
	l := used[node]
	if l == nil {
		l = v1.ResourceList{}
		used[node] = l
	}
	for name, q := range p.Spec.Containers[0].Resources.Requests {
		cur := l[name]
		cur.Add(q)
		l[name] = cur
	}
}

func fits(n *v1.Node, used v1.ResourceList, p *v1.Pod) bool {
	for name, q := range p.Spec.Containers[0].Resources.Requests {
		free := n.Status.Allocatable[name].DeepCopy()
		if u, ok := used[name]; ok {
			free.Sub(u)
		}
		if free.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// register makes the pick-th instance waiting for its kubelet a Node;
// instances whose kubelet never comes are skipped.
func (c *Cloud) register(pick int) string {
	c.mu.Lock()
	var waiting []*cloudInstance
	for _, in := range c.instances {
		if in.node == "" && !in.never {
			waiting = append(waiting, in)
		}
	}
	if len(waiting) == 0 {
		c.mu.Unlock()
		return ""
	}
	in := waiting[pick%len(waiting)]
	in.node = in.id
	n := c.template(c.spec(in.group), in.id)
	c.mu.Unlock()
	n.CreationTimestamp = metav1.NewTime(c.world.clock.Now())
	_ = c.world.store.Tracker().Add(n)
	return n.Name
}

// addRegistered adds an instance of group whose Node is registered now
// (the cluster a run starts from).
func (c *Cloud) addRegistered(group string) {
	c.mu.Lock()
	c.serial++
	c.instances = append(c.instances, &cloudInstance{id: fmt.Sprintf("%s-%d", group, c.serial), group: group,
		created: c.world.clock.Now()})
	c.groups[group].target++
	c.mu.Unlock()
	c.registerAll()
}

// registerAll registers every instance whose kubelet will come.
func (c *Cloud) registerAll() {
	for c.register(0) != "" {
	}
}

// loseKubelet marks the pick-th waiting instance as one whose kubelet
// never registers.
func (c *Cloud) loseKubelet(pick int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var waiting []*cloudInstance
	for _, in := range c.instances {
		if in.node == "" && !in.never {
			waiting = append(waiting, in)
		}
	}
	if len(waiting) == 0 {
		return ""
	}
	in := waiting[pick%len(waiting)]
	in.never = true
	return in.id
}

// endTerminations deletes the pods whose grace period is over (their
// kubelet stopped them).
func (w *World) endTerminations() {
	now := w.clock.Now()
	for _, p := range w.pods() {
		if graceOver(p, now) {
			_ = w.store.Tracker().Delete(podsResource, p.Namespace, p.Name)
		}
	}
}
