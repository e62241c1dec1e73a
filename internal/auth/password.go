package auth

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tuxlab/internal/errs"
)

// BcryptCost is the work factor the contract fixes.
const BcryptCost = 12

// Hasher computes bcrypt hashes on a bounded number of goroutines, so a flood of
// logins queues up here instead of taking every CPU from the other routes. When
// a queue is full, callers are turned away at once with 503.
//
// Callers wait in two lanes. Known clients (an address that logged in lately)
// go first, each lane with its own queue, so a flood of wrong logins from
// unknown addresses can neither delay nor turn away them. Work a caller can
// repeat at will with no login to show for it (checking a password change's
// current password) waits in the ordinary lane, whoever asks.
type Hasher struct {
	cost       int
	dummy      []byte // compared against for unknown users, so timing does not tell
	maxWaiting int    // per lane

	mu     sync.Mutex
	free   int                // hashes that may start now
	queues [2][]chan struct{} // waiting callers: laneKnown first, then laneOther
}

const (
	laneKnown = iota
	laneOther
)

type priorityKey struct{}

// WithPriority marks ctx as a known client's: its hashes wait in the first lane.
func WithPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, priorityKey{}, true)
}

// withoutPriority marks ctx as an ordinary caller's, whatever it carried:
// for work a caller could repeat at will, such as guessing a password.
func withoutPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, priorityKey{}, false)
}

func laneOf(ctx context.Context) int {
	if known, _ := ctx.Value(priorityKey{}).(bool); known {
		return laneKnown
	}
	return laneOther
}

// NewHasher returns a Hasher running at most workers hashes at once (0 means one
// less than the CPUs, at least one) with room for queue callers waiting per lane.
func NewHasher(cost, workers, queue int) *Hasher {
	if workers <= 0 {
		workers = max(1, runtime.GOMAXPROCS(0)-1)
	}
	h := &Hasher{cost: cost, free: workers, maxWaiting: queue}
	dummy, err := bcrypt.GenerateFromPassword([]byte("tuxlab-timing-equaliser"), cost)
	if err != nil {
		panic(err) // only a cost outside bcrypt's range gets here
	}
	h.dummy = dummy
	return h
}

var errBusy = &errs.Error{Kind: errs.Unavailable, Detail: "Too many logins at once, try again shortly", RetryAfter: 2 * time.Second}

// do runs fn once a slot is free, or fails when its lane is full or ctx ends.
func (h *Hasher) do(ctx context.Context, fn func()) error {
	if err := h.acquire(ctx, laneOf(ctx)); err != nil {
		return err
	}
	defer h.release()
	fn()
	return nil
}

func (h *Hasher) acquire(ctx context.Context, lane int) error {
	h.mu.Lock()
	if h.free > 0 && len(h.queues[laneKnown])+len(h.queues[laneOther]) == 0 {
		h.free--
		h.mu.Unlock()
		return nil
	}
	if len(h.queues[lane]) >= h.maxWaiting {
		h.mu.Unlock()
		return errBusy
	}
	ch := make(chan struct{})
	h.queues[lane] = append(h.queues[lane], ch)
	h.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		h.mu.Lock()
		for i, c := range h.queues[lane] {
			if c == ch {
				h.queues[lane] = append(h.queues[lane][:i:i], h.queues[lane][i+1:]...)
				h.mu.Unlock()
				return ctx.Err()
			}
		}
		h.mu.Unlock()
		h.release() // the slot was handed over meanwhile: pass it on
		return ctx.Err()
	}
}

// release hands the slot to the first waiter of the first lane that has one.
func (h *Hasher) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for lane := range h.queues {
		if q := h.queues[lane]; len(q) > 0 {
			h.queues[lane] = q[1:]
			close(q[0])
			return
		}
	}
	h.free++
}

// Hash returns the bcrypt hash of password.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	var hash []byte
	var err error
	if qerr := h.do(ctx, func() { hash, err = bcrypt.GenerateFromPassword([]byte(password), h.cost) }); qerr != nil {
		return "", qerr
	}
	return string(hash), err
}

// Verify reports whether password matches hash. An empty hash (unknown user) is
// compared against a dummy so both cases cost the same.
func (h *Hasher) Verify(ctx context.Context, hash, password string) (bool, error) {
	stored := []byte(hash)
	if hash == "" {
		stored = h.dummy
	}
	var err error
	if qerr := h.do(ctx, func() { err = bcrypt.CompareHashAndPassword(stored, []byte(password)) }); qerr != nil {
		return false, qerr
	}
	switch {
	case err == nil:
		return hash != "", nil
	case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
		return false, nil
	default:
		return false, err
	}
}
