package dst

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// gates hold back watch events by resource ("pods", "nodes", ...): while a
// resource's gate is shut, the events of every watch on it wait, in order,
// and the informers' caches lag the API server; other resources' events
// still flow, so a cache sees them out of order between kinds.
type gates struct {
	mu      sync.Mutex
	shut    map[string]bool
	changed chan struct{}
}

func newGates() *gates { return &gates{shut: map[string]bool{}, changed: make(chan struct{})} }

func (g *gates) set(resource string, shut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut[resource] == shut {
		return
	}
	g.shut[resource] = shut
	close(g.changed)
	g.changed = make(chan struct{})
}

// state reports whether resource's gate is shut, and a channel closed at
// the next change of any gate.
func (g *gates) state(resource string) (bool, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shut[resource], g.changed
}

func (g *gates) openAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut = map[string]bool{}
	close(g.changed)
	g.changed = make(chan struct{})
}

// gatedWatch passes a watch's events on, holding them while the gate of
// its resource is shut.
type gatedWatch struct {
	src      watch.Interface
	resource string
	gates    *gates
	out      chan watch.Event
	stop     chan struct{}
	once     sync.Once
}

func newGatedWatch(src watch.Interface, resource string, g *gates) *gatedWatch {
	w := &gatedWatch{src: src, resource: resource, gates: g, out: make(chan watch.Event), stop: make(chan struct{})}
	go w.run()
	return w
}

func (w *gatedWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *gatedWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.src.Stop()
	})
}

func (w *gatedWatch) run() {
	defer close(w.out)
	var queue []watch.Event
	in := w.src.ResultChan()
	for {
		shut, changed := w.gates.state(w.resource)
		var send chan watch.Event
		var next watch.Event
		if len(queue) > 0 && !shut {
			send, next = w.out, queue[0]
		}
		select {
		case ev, ok := <-in:
			if !ok {
				return
			}
			queue = append(queue, ev)
		case send <- next:
			queue = queue[1:]
		case <-changed:
		case <-w.stop:
			return
		}
	}
}
