package engine

import (
	"container/heap"
	"time"
)

// eventKind says what happens at an event's time.
type eventKind uint8

const (
	evSubmit           eventKind = iota // a Job pod is submitted
	evFinish                            // a running Job pod completes
	evRegister                          // a requested node registers with the cluster
	evGPUs                              // a node's device plugin advertises its GPUs
	evDeleted                           // a node being removed is gone
	evCreationFailed                    // the cloud reports a node it could not create
	evGPUFailure                        // GPUs of a group's nodes fail
	evInterrupt                         // the cloud tells a node it will be taken away
	evReclaim                           // the cloud takes an interrupted node away
	evInterruptGroup                    // an interruption trace's entry: some of a group's nodes
	evBlockTerminating                  // the cloud starts taking a capacity block's nodes
	evBlockEnd                          // a capacity block ends
	evQueuedGrant                       // the cloud grants a queued request
	evRunEnd                            // a queued request's nodes reach their run duration
)

// event is one thing that happens at a point of virtual time. Events at the
// same time run in the order they were scheduled (seq), so a run is
// deterministic.
type event struct {
	at   time.Duration
	seq  uint64
	kind eventKind
	pod  *simPod
	// gen is the pod's binding generation when the event was made: a finish
	// event of an evicted pod is stale.
	gen      int
	creation *creation
	node     string
	failure  *gpuFailure
	// group and count are an interruption trace's entry.
	group *groupState
	count int
	// queued is the queued request a grant or run end is of.
	queued *queuedRequest
}

// eventQueue holds the events to come, earliest first; seq numbers them
// in the order they were scheduled.
type eventQueue struct {
	heap eventHeap
	seq  uint64
}

// push queues ev.
func (q *eventQueue) push(ev *event) {
	q.seq++
	ev.seq = q.seq
	heap.Push(&q.heap, ev)
}

// nextAt is the time of the earliest queued event, or never.
func (q *eventQueue) nextAt() time.Duration {
	if len(q.heap) == 0 {
		return never
	}
	return q.heap[0].at
}

// pop takes the earliest queued event.
func (q *eventQueue) pop() *event { return heap.Pop(&q.heap).(*event) }

// eventHeap orders events by time, then by seq (container/heap).
type eventHeap []*event

func (q eventHeap) Len() int { return len(q) }
func (q eventHeap) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventHeap) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventHeap) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventHeap) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}
