package auth

import (
	"context"
	"errors"
	"runtime"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tuxlab/internal/errs"
)

// BcryptCost is the work factor the contract fixes.
const BcryptCost = 12

// Hasher computes bcrypt hashes on a bounded number of goroutines, so a flood of
// logins queues up here instead of taking every CPU from the other routes. When
// the queue itself is full, callers are turned away at once with 503.
type Hasher struct {
	cost    int
	slots   chan struct{} // one token per hash allowed to run
	waiting chan struct{} // one token per caller allowed to queue
	dummy   []byte        // compared against for unknown users, so timing does not tell
}

// NewHasher returns a Hasher running at most workers hashes at once (0 means one
// less than the CPUs, at least one) with room for queue callers waiting.
func NewHasher(cost, workers, queue int) *Hasher {
	if workers <= 0 {
		workers = max(1, runtime.GOMAXPROCS(0)-1)
	}
	h := &Hasher{cost: cost, slots: make(chan struct{}, workers), waiting: make(chan struct{}, queue)}
	dummy, err := bcrypt.GenerateFromPassword([]byte("tuxlab-timing-equaliser"), cost)
	if err != nil {
		panic(err) // only a cost outside bcrypt's range gets here
	}
	h.dummy = dummy
	return h
}

var errBusy = &errs.Error{Kind: errs.Unavailable, Detail: "Too many logins at once, try again shortly", RetryAfter: 2 * time.Second}

// do runs fn once a slot is free, or fails when the queue is full or ctx ends.
func (h *Hasher) do(ctx context.Context, fn func()) error {
	select {
	case h.waiting <- struct{}{}:
	default:
		return errBusy
	}
	defer func() { <-h.waiting }()
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-h.slots }()
	fn()
	return nil
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
