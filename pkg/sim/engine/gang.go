package engine

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/predicates"
	pr "github.com/gpuscale/gpuscale/pkg/provisioningrequest"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// gangState is one job of several pods that start only together, as a gang
// scheduler (Kueue, the coscheduling plugin, Volcano) places them. With
// ProvisioningRequests on, the job first asks for its capacity as Kueue's
// ProvisioningRequest admission check does: its pods wait behind a
// scheduling gate, consumers of the request, until the request is
// Provisioned; a booking that expires before they all run, or a failed
// request, sends the job back for a new request.
type gangState struct {
	name    string
	w       *workloadState
	pods    []*simPod
	arrived time.Duration
	// started is when all its pods first ran; -1 until then.
	started time.Duration
	// req is the job's ProvisioningRequest while one is open; gated: its
	// pods wait for the request.
	req      *pr.ProvisioningRequest
	attempts int
	gated    bool
}

// newGang makes a job of n pods of w arriving at at.
func (e *Engine) newGang(w *workloadState, n int, at, duration time.Duration) error {
	e.work.gangSeq++
	g := &gangState{name: fmt.Sprintf("%s-gang-%d", w.cfg.Name, e.work.gangSeq), w: w, arrived: at, started: -1}
	for k := 0; k < n; k++ {
		p, err := e.newPod(w, at, duration)
		if err != nil {
			return err
		}
		p.gang = g
		p.pi.Pod.Labels["gang"] = g.name
		g.pods = append(g.pods, p)
		e.work.jobs++
		e.rec.demand(at, at+duration, w, 1)
		e.events.push(&event{at: at, kind: evSubmit, pod: p})
	}
	e.work.gangs = append(e.work.gangs, g)
	return nil
}

// requestsOn reports whether gangs ask for capacity through requests.
func (e *Engine) requestsOn() bool { return e.opts.Autoscaler.ProvisioningRequests.Enabled }

// submitGangPod: the job's pods arrive together; with requests on, the
// first one opens the job's request and they all wait behind its gate.
func (e *Engine) submitGangPod(p *simPod) {
	g := p.gang
	if e.requestsOn() && g.req == nil && g.started < 0 {
		e.openRequest(g)
	}
	if g.gated {
		p.pi.Pod.Annotations = map[string]string{pr.AnnotationConsume: g.req.Name, pr.AnnotationClass: g.req.Spec.ProvisioningClassName}
	}
	e.submit(p)
}

// openRequest creates the job's ProvisioningRequest: one pod set of the
// job's pod shape and size.
func (e *Engine) openRequest(g *gangState) {
	g.attempts++
	name := fmt.Sprintf("%s-%d", g.name, g.attempts)
	g.req = &pr.ProvisioningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: g.w.cfg.Namespace, UID: types.UID(g.w.cfg.Namespace + "/" + name),
			CreationTimestamp: metav1.NewTime(clock(e.now).Truncate(time.Second))},
		Spec: pr.Spec{ProvisioningClassName: pr.ClassBestEffortAtomicScaleUp,
			PodSets: []pr.PodSet{{PodTemplateRef: pr.Reference{Name: g.name}, Count: int32(len(g.pods))}}},
	}
	if c := g.w.cfg.ProvisioningClass; c != "" {
		g.req.Spec.ProvisioningClassName = c
	}
	if d := g.w.cfg.MaxRunDuration.Duration; d > 0 {
		g.req.Spec.Parameters = map[string]string{pr.ParamMaxRunDurationSeconds: strconv.FormatInt(int64(d/time.Second), 10)}
	}
	g.gated = true
	for _, p := range g.pods {
		if p.pi.Pod.Annotations != nil {
			p.pi.Pod.Annotations[pr.AnnotationConsume] = name
		}
	}
	e.work.requests = append(e.work.requests, g)
	e.rec.gangRequests++
	e.touch()
}

// requestInput is the open requests as the core reads them.
func (e *Engine) requestInput() []pr.Request {
	if !e.requestsOn() {
		return nil
	}
	out := make([]pr.Request, 0, len(e.work.requests))
	for _, g := range e.work.requests {
		src := g.pods[0].pi.Pod
		spec := src.Spec.DeepCopy()
		spec.NodeName = ""
		t := &v1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: src.Namespace},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: src.Labels}, Spec: *spec}}
		out = append(out, pr.Request{ProvisioningRequest: g.req, Templates: map[string]*v1.PodTemplate{g.name: t}})
	}
	return out
}

// setRequestConditions is the simulated API server's status write, and
// the job's reaction to it: provisioned lifts the gate; a booking that
// ends before the job started, or a failure, opens a new request; a
// booking used up closes the request.
func (e *Engine) setRequestConditions(a autoscaler.SetRequestConditions) error {
	var g *gangState
	for _, x := range e.work.requests {
		if x.req.Namespace == a.Namespace && x.req.Name == a.Name {
			g = x
		}
	}
	if g == nil {
		return fmt.Errorf("ProvisioningRequest %s does not exist", a.Key())
	}
	g.req.Status.Conditions = pr.SetConditions(g.req.Status.Conditions, a.Conditions...)
	switch {
	case g.req.IsTrue(pr.Failed) || g.req.IsTrue(pr.BookingExpired):
		e.closeRequest(g)
		if g.started < 0 {
			e.rec.gangRequeues++
			e.openRequest(g)
		}
	case g.req.IsTrue(pr.Provisioned) && g.gated:
		g.gated = false
		e.pace.schedDirty = true
	}
	e.touch()
	return nil
}

// closeRequest drops the job's request. Once the job has run its pods
// consume nothing any more: an evicted one is an ordinary pending pod.
func (e *Engine) closeRequest(g *gangState) {
	if g.started >= 0 {
		for _, p := range g.pods {
			delete(p.pi.Pod.Annotations, pr.AnnotationConsume)
		}
	}
	for i, x := range e.work.requests {
		if x == g {
			e.work.requests = append(e.work.requests[:i], e.work.requests[i+1:]...)
			break
		}
	}
	g.req = nil
}

// placeGang binds the job's waiting pods if every one of them finds a
// node, as a gang scheduler would, and none of them otherwise. It reports
// whether it bound them.
func (e *Engine) placeGang(checker *predicates.Checker, g *gangState) (bool, error) {
	var waiting []*simPod
	for _, p := range g.pods {
		if p.node == "" && e.work.pods[p.pi.Pod.Name] == p {
			waiting = append(waiting, p)
		}
	}
	nodes := make([]*snapshot.NodeInfo, len(waiting))
	e.snap.Fork()
	for i, p := range waiting {
		nodes[i] = e.sched.pickNode(e.snap, checker, p.pi)
		if nodes[i] == nil {
			return false, e.snap.Revert()
		}
		if err := e.snap.AddPodInfo(p.pi, nodes[i].Name()); err != nil {
			_ = e.snap.Revert()
			return false, err
		}
	}
	if err := e.snap.Revert(); err != nil {
		return false, err
	}
	for i, p := range waiting {
		if err := e.bind(p, e.snap.Node(nodes[i].Name())); err != nil {
			return false, err
		}
	}
	return true, nil
}

// gangBound notes a job whose pods all run for the first time.
func (e *Engine) gangBound(g *gangState) {
	if g.started >= 0 {
		return
	}
	for _, p := range g.pods {
		if p.node == "" {
			return
		}
	}
	g.started = e.now
	e.rec.gangWaits = append(e.rec.gangWaits, e.now-g.arrived)
}

// gangKey is the scheduler's equivalence key of a job: jobs of one
// workload and size are alike to the filters.
func gangKey(g *gangState) string { return fmt.Sprintf("%s/gang-of-%d", g.w.key, len(g.pods)) }

// GangResult is the account of the jobs of several pods.
type GangResult struct {
	// Jobs is how many arrived before the run ended; NeverStarted how
	// many of them never had all their pods running.
	Jobs, NeverStarted int
	// Waits are the waits of those that started, sorted: from arrival
	// until all their pods ran; those never started count until the end.
	Waits []time.Duration
	// Requests counts the ProvisioningRequests the jobs opened, Requeues
	// those opened again after a booking ran out or a request failed.
	Requests, Requeues int
}

// WaitPercentile returns the p-th percentile (0..100) of Waits, nearest rank.
func (g *GangResult) WaitPercentile(p float64) time.Duration {
	if len(g.Waits) == 0 {
		return 0
	}
	i := int(p/100*float64(len(g.Waits))+0.999999) - 1
	return g.Waits[max(0, min(i, len(g.Waits)-1))]
}

// gangResult counts the jobs that arrived before the run ended (at its
// duration, or earlier when stopped): a job due later is not counted, as a
// pod not yet submitted is not.
func (e *Engine) gangResult(res *Result) {
	gr := GangResult{Requests: e.rec.gangRequests, Requeues: e.rec.gangRequeues}
	gr.Waits = append(gr.Waits, e.rec.gangWaits...)
	for _, g := range e.work.gangs {
		if g.arrived > e.end {
			continue
		}
		gr.Jobs++
		if g.started < 0 {
			gr.NeverStarted++
			gr.Waits = append(gr.Waits, e.end-g.arrived)
		}
	}
	slices.Sort(gr.Waits)
	res.Gangs = gr
}
