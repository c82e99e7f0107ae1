package controller

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/gpuscale/gpuscale/pkg/status"
)

// eventSink writes the autoscaler's events, each object's same message at
// most once per quiet period.
type eventSink struct {
	recorder record.EventRecorder
	limiter  *eventLimiter
	clock    clock.PassiveClock
}

// emit sends the event unless the same was sent lately, and says whether
// it sent it. annotations (status.Annotation*) carry the message's facts
// as data for explain; nil for none.
func (e *eventSink) emit(ref *v1.ObjectReference, key, typ, reason, msg string, annotations map[string]string) bool {
	if !e.limiter.allow(key, reason+msg, e.clock.Now()) {
		return false
	}
	if annotations == nil {
		e.recorder.Event(ref, typ, reason, msg)
	} else {
		e.recorder.AnnotatedEventf(ref, annotations, typ, reason, "%s", msg)
	}
	return true
}

func (e *eventSink) pod(p status.Ref, typ, reason, msg string, annotations map[string]string) bool {
	ref := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID}
	return e.emit(ref, "pod/"+p.Namespace+"/"+p.Name, typ, reason, msg, annotations)
}

func (e *eventSink) node(name, typ, reason, msg string, annotations map[string]string) {
	ref := &v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: name}
	e.emit(ref, "node/"+name, typ, reason, msg, annotations)
}

func (e *eventSink) configMap(namespace, name, typ, reason, msg string, annotations map[string]string) {
	ref := &v1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: namespace, Name: name}
	e.emit(ref, "configmap/"+namespace+"/"+name, typ, reason, msg, annotations)
}

// eventLimiter keeps the same event from being repeated every loop: an
// object gets a message again only after quiet has passed or when the
// message changes.
type eventLimiter struct {
	quiet time.Duration
	mu    sync.Mutex
	last  map[string]sent
}

type sent struct {
	msg string
	at  time.Time
}

func newEventLimiter(quiet time.Duration) *eventLimiter {
	return &eventLimiter{quiet: quiet, last: map[string]sent{}}
}

// allow reports whether to send msg about the object with key at now, and
// notes it.
func (l *eventLimiter) allow(key, msg string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.last[key]; ok && s.msg == msg && now.Sub(s.at) < l.quiet {
		return false
	}
	l.last[key] = sent{msg, now}
	if len(l.last) > 100000 {
		for k, s := range l.last {
			if now.Sub(s.at) >= l.quiet {
				delete(l.last, k)
			}
		}
	}
	return true
}
