package terminal

import (
	"context"
	"sync"
)

// resizer holds the latest size a client asked for until the engine takes
// it: one engine resize at a time per terminal, and however many messages
// arrive meanwhile, only the last one's size is applied next. Input waits
// until the resizer is idle, which is at most the resize in flight and the
// latest one: a flood of resize messages costs the engine two calls.
type resizer struct {
	wake chan struct{} // capacity 1: a size is waiting

	mu         sync.Mutex
	cols, rows uint
	asked      uint64        // how many sizes were set: a later set changes it
	pending    bool          // a size waits for the engine
	busy       bool          // an engine resize is in flight
	idle       chan struct{} // closed while neither
}

func newResizer() *resizer {
	idle := make(chan struct{})
	close(idle)
	return &resizer{wake: make(chan struct{}, 1), idle: idle}
}

// set records a size, replacing any not applied yet, and returns its
// number for setIfLatest.
func (r *resizer) set(cols, rows uint) uint64 {
	r.mu.Lock()
	n := r.setLocked(cols, rows)
	r.mu.Unlock()
	r.signal()
	return n
}

// setIfLatest records a size unless another was set after size number n:
// a size the client asked for since then wins. It reports whether it did.
func (r *resizer) setIfLatest(n uint64, cols, rows uint) bool {
	r.mu.Lock()
	if r.asked != n {
		r.mu.Unlock()
		return false
	}
	r.setLocked(cols, rows)
	r.mu.Unlock()
	r.signal()
	return true
}

func (r *resizer) setLocked(cols, rows uint) uint64 {
	if !r.pending && !r.busy {
		r.idle = make(chan struct{})
	}
	r.cols, r.rows, r.pending = cols, rows, true
	r.asked++
	return r.asked
}

func (r *resizer) signal() {
	select {
	case r.wake <- struct{}{}:
	default: // already signalled
	}
}

// take returns the waiting size, if any, and marks it in flight until done.
func (r *resizer) take() (cols, rows uint, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.pending {
		return 0, 0, false
	}
	r.pending, r.busy = false, true
	return r.cols, r.rows, true
}

// done records that the engine resize from take has ended.
func (r *resizer) done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.busy = false
	if !r.pending {
		close(r.idle)
	}
}

// waitIdle waits until no size is waiting and none is in flight.
func (r *resizer) waitIdle(ctx context.Context) error {
	r.mu.Lock()
	idle := r.idle
	r.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// applyResizes gives the engine the latest size, one call at a time.
func (t *term) applyResizes() {
	ctx := t.ctx
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.resize.wake:
		}
		cols, rows, ok := t.resize.take()
		if !ok {
			continue
		}
		err := t.sess.Resize(ctx, cols, rows)
		t.resize.done()
		if err == nil {
			t.rec.resize(cols, rows)
		}
		if err != nil && ctx.Err() == nil {
			t.sendControl(control{Type: "error", Detail: "Could not resize the terminal"})
		}
	}
}
