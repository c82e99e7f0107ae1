// Package looprecord records each loop of the autoscaler (its input:
// snapshot, pending pods, DaemonSets, PodDisruptionBudgets, outcomes; and
// its plan) as JSON lines, and replays a record through a fresh decision
// core. Because the core's state changes only through Step's inputs, a
// replay of a live run must give the same plans: a difference is a bug
// (state the shell changed behind the core's back, or a decision that
// depends on something other than its inputs). `gpuscale
// cluster-autoscaler --record-loops` writes a record; `gpuscale simulate
// --replay` replays one.
package looprecord

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/capacitybuffer"
	"github.com/gpuscale/gpuscale/pkg/expander"
	"github.com/gpuscale/gpuscale/pkg/forecast"
	"github.com/gpuscale/gpuscale/pkg/pending"
	"github.com/gpuscale/gpuscale/pkg/provisioningrequest"
	"github.com/gpuscale/gpuscale/pkg/scaledown/drain"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Record is one loop.
type Record struct {
	Input Input `json:"input"`
	Plan  Plan  `json:"plan"`
}

// Input is autoscaler.Input as data.
type Input struct {
	Now      time.Time        `json:"now"`
	Snapshot snapshot.Objects `json:"snapshot"`
	Pending  []*v1.Pod        `json:"pending,omitempty"`
	// OtherSchedulers count the waiting pods the shell left alone.
	OtherSchedulers []pending.SchedulerPods         `json:"otherSchedulers,omitempty"`
	DaemonSets      []*appsv1.DaemonSet             `json:"daemonSets,omitempty"`
	PDBs            []*policyv1.PodDisruptionBudget `json:"pdbs,omitempty"`
	Outcomes        []Tagged                        `json:"outcomes,omitempty"`
	// ProvisioningRequests with their PodTemplates.
	ProvisioningRequests []provisioningrequest.Request `json:"provisioningRequests,omitempty"`
	Replicas             drain.Replicas                `json:"replicas,omitempty"`
	Priorities           *expander.Priorities          `json:"priorities,omitempty"`
	// CapacityBuffers are the resolved buffers.
	CapacityBuffers []capacitybuffer.Buffer `json:"capacityBuffers,omitempty"`
	// Demand is the inference workloads' demand for the forecast buffers.
	Demand []forecast.Demand `json:"demand,omitempty"`
}

// Plan is autoscaler.Plan as data.
type Plan struct {
	Actions        []Tagged      `json:"actions,omitempty"`
	NextDecisionAt time.Time     `json:"nextDecisionAt,omitzero"`
	Status         status.Status `json:"status"`
}

// Tagged is an action or an outcome with its type's name.
type Tagged struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// Recorder writes loops as JSON lines; safe for concurrent use. It
// implements autoscaler.Recorder.
type Recorder struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

// NewRecorder writes to w; call Flush before reading what it wrote.
func NewRecorder(w io.Writer) *Recorder { return &Recorder{w: bufio.NewWriter(w)} }

// Record writes one loop. The first error stops the record (see Err).
func (r *Recorder) Record(in autoscaler.Input, plan autoscaler.Plan) {
	rec, err := FromLoop(in, plan)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	if err != nil {
		r.err = err
		return
	}
	line, err := json.Marshal(rec)
	if err == nil {
		_, err = r.w.Write(append(line, '\n'))
	}
	r.err = err
}

// Flush writes what is buffered and returns the first error.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = r.w.Flush()
	}
	return r.err
}

// FromLoop turns one loop into a Record.
func FromLoop(in autoscaler.Input, plan autoscaler.Plan) (Record, error) {
	rec := Record{
		Input: Input{Now: in.Now, Snapshot: in.Snapshot.Export(), Pending: in.Pending, OtherSchedulers: in.OtherSchedulers,
			DaemonSets: in.DaemonSets, PDBs: in.PDBs, ProvisioningRequests: in.ProvisioningRequests, Replicas: in.Replicas,
			Priorities: in.Priorities, CapacityBuffers: in.CapacityBuffers, Demand: in.Demand},
		Plan: Plan{NextDecisionAt: plan.NextDecisionAt, Status: plan.Status},
	}
	for _, o := range in.Outcomes {
		t, err := tag(o)
		if err != nil {
			return rec, err
		}
		rec.Input.Outcomes = append(rec.Input.Outcomes, t)
	}
	for _, a := range plan.Actions {
		t, err := tag(a)
		if err != nil {
			return rec, err
		}
		rec.Plan.Actions = append(rec.Plan.Actions, t)
	}
	return rec, nil
}

// Read reads a record written by a Recorder; an error names the line.
func Read(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return out, nil
}

// ToInput builds the autoscaler.Input a record holds.
func (in Input) ToInput() (autoscaler.Input, error) {
	s, err := snapshot.FromObjects(in.Snapshot)
	if err != nil {
		return autoscaler.Input{}, fmt.Errorf("snapshot: %w", err)
	}
	out := autoscaler.Input{Now: in.Now, Snapshot: s, Pending: in.Pending, OtherSchedulers: in.OtherSchedulers,
		DaemonSets: in.DaemonSets, PDBs: in.PDBs, ProvisioningRequests: in.ProvisioningRequests, Replicas: in.Replicas,
		Priorities: in.Priorities, CapacityBuffers: in.CapacityBuffers, Demand: in.Demand}
	for _, t := range in.Outcomes {
		o, err := untagOutcome(t)
		if err != nil {
			return out, err
		}
		out.Outcomes = append(out.Outcomes, o)
	}
	return out, nil
}
