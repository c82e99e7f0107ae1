package dst

import (
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FaultKind is how a call goes wrong.
type FaultKind int

// Fault kinds. The API ones apply to writes; the cloud ones to the
// provider's calls.
const (
	// FaultConflict answers 409: the object changed under the writer.
	FaultConflict FaultKind = iota
	// FaultServerError answers 500 (an admission webhook, etcd).
	FaultServerError
	// FaultTimeout answers 504 without doing anything.
	FaultTimeout
	// FaultLostReply does the write and answers 504: the caller cannot
	// tell it happened.
	FaultLostReply
	// FaultCloudFail fails a cloud call.
	FaultCloudFail
	// FaultCloudThrottle refuses a cloud call with a rate-limit error.
	FaultCloudThrottle
	// FaultCloudLate does the cloud call and answers only after Delay of
	// virtual time (or when the caller gives up).
	FaultCloudLate
	// FaultCloudLostReply does the cloud call and answers with an error.
	FaultCloudLostReply
)

var faultNames = [...]string{"conflict", "server-error", "timeout", "lost-reply", "cloud-fail", "cloud-throttle",
	"cloud-late", "cloud-lost-reply"}

func (k FaultKind) String() string {
	if int(k) < len(faultNames) {
		return faultNames[k]
	}
	return fmt.Sprintf("fault(%d)", int(k))
}

// Fault is one armed fault: the next Count calls that match go wrong.
type Fault struct {
	Kind FaultKind
	// Target is an API resource ("nodes", "pods/eviction", "configmaps")
	// or a cloud method ("IncreaseSize", "DeleteNodes", "Refresh",
	// "DecreaseTargetSize").
	Target string
	// Object, when set, limits an API fault to one object by name; writes
	// from concurrent drains then meet it in the same order whatever the
	// goroutines' interleaving.
	Object string
	Count  int
	// Delay is how late a FaultCloudLate call answers.
	Delay time.Duration
}

func (f Fault) String() string {
	s := fmt.Sprintf("%s on %s", f.Kind, f.Target)
	if f.Object != "" {
		s += "/" + f.Object
	}
	if f.Kind == FaultCloudLate {
		s += fmt.Sprintf(" by %s", f.Delay)
	}
	return fmt.Sprintf("%s x%d", s, f.Count)
}

func (f *Fault) apiError(resource, name string) error {
	gr := schema.GroupResource{Resource: resource}
	switch f.Kind {
	case FaultConflict:
		return apierrors.NewConflict(gr, name, errors.New("the object has been modified"))
	case FaultServerError:
		return apierrors.NewInternalError(errors.New("admission webhook denied the request"))
	default:
		return apierrors.NewTimeoutError("the request timed out", 1)
	}
}

func (f *Fault) cloudError(method string) error {
	switch f.Kind {
	case FaultCloudThrottle:
		return fmt.Errorf("%s: Throttling: Rate exceeded", method)
	case FaultCloudLostReply:
		return fmt.Errorf("%s: connection reset by peer", method)
	default:
		return fmt.Errorf("%s: InternalError: the service is unavailable", method)
	}
}

// faultBook holds the armed faults and counts those injected.
type faultBook struct {
	clock    *simClock
	mu       sync.Mutex
	armed    []*Fault
	injected map[FaultKind]int
	// hits are the virtual times at which a fault met a call, in order.
	hits []time.Time
}

// firstHitSince is when a fault first met a call at or after t (zero when
// none has).
func (b *faultBook) firstHitSince(t time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range b.hits {
		if !h.Before(t) {
			return h
		}
	}
	return time.Time{}
}

func (b *faultBook) arm(f Fault) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed = append(b.armed, &f)
}

// take uses one count of the first armed fault that matches a call, nil
// when none does.
func (b *faultBook) take(target, object string, api bool) *Fault {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, f := range b.armed {
		cloud := f.Kind >= FaultCloudFail
		if cloud == api || f.Target != target || (f.Object != "" && f.Object != object) {
			continue
		}
		f.Count--
		if f.Count <= 0 {
			b.armed = append(b.armed[:i], b.armed[i+1:]...)
		}
		if b.injected == nil {
			b.injected = map[FaultKind]int{}
		}
		b.injected[f.Kind]++
		if b.clock != nil {
			b.hits = append(b.hits, b.clock.Now())
		}
		c := *f
		return &c
	}
	return nil
}

// clear disarms every fault (the quiet tail of a schedule).
func (b *faultBook) clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed = nil
}

func (b *faultBook) counts() map[FaultKind]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[FaultKind]int{}
	for k, v := range b.injected {
		out[k] = v
	}
	return out
}
