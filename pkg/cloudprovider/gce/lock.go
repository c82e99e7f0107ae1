package gce

import (
	"context"
	"sync"
)

// ctxMutex is a mutex whose lock gives up when the context ends, so that
// a caller queued behind a long operation keeps its own deadline.
type ctxMutex chan struct{}

func newCtxMutex() ctxMutex { return make(ctxMutex, 1) }

// lock takes the mutex, or returns the context's error once it ends. A
// free mutex is taken even with an ended context, so the outcome does not
// depend on select's random choice.
func (m ctxMutex) lock(ctx context.Context) error {
	select {
	case m <- struct{}{}:
		return nil
	default:
	}
	select {
	case m <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m ctxMutex) unlock() { <-m }

// keyedMutex holds one ctxMutex per key, made on first use and kept: the
// keys are node groups, few and long-lived.
type keyedMutex struct {
	mu    sync.Mutex
	byKey map[string]ctxMutex
}

func (k *keyedMutex) get(key string) ctxMutex {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.byKey == nil {
		k.byKey = map[string]ctxMutex{}
	}
	m := k.byKey[key]
	if m == nil {
		m = newCtxMutex()
		k.byKey[key] = m
	}
	return m
}

// lock takes the key's mutex, or returns the context's error once it ends.
func (k *keyedMutex) lock(ctx context.Context, key string) error { return k.get(key).lock(ctx) }

func (k *keyedMutex) unlock(key string) { k.get(key).unlock() }
