package profile

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"tuxlab/internal/errs"
)

// Defaults of the image decoding of uploads.
const (
	// DefaultDecodeTimeout is how long an upload waits for its image to be
	// decoded, its wait for a decoder included.
	DefaultDecodeTimeout = 10 * time.Second
	// WaitingPerDecoder is how many uploads may wait for each decoder; more
	// are turned away at once with 503.
	WaitingPerDecoder = 4
)

// DefaultDecoders is how many decodes run at once unless configured: half
// the CPUs, 1 to 4. A decode of a 4096x4096 image holds 64 to 128 MiB.
func DefaultDecoders() int { return max(1, min(4, runtime.GOMAXPROCS(0)/2)) }

// Why an upload's decode did not answer (503, each with Retry-After).
var (
	ErrDecodersBusy = &errs.Error{Kind: errs.Unavailable, RetryAfter: 2 * time.Second,
		Detail: "Too many images are being processed: upload yours again in a moment"}
	ErrDecodeTimeout = &errs.Error{Kind: errs.Unavailable, RetryAfter: 5 * time.Second,
		Detail: "Processing the image took too long: try again in a moment, or with a smaller image"}
	ErrDecodeStopped = &errs.Error{Kind: errs.Unavailable, RetryAfter: 5 * time.Second,
		Detail: "The server is shutting down: upload the image again in a moment"}
)

// decoder runs image work off the request's goroutine: at most cap(slots)
// at once, at most maxWaiting callers waiting for a slot, each caller
// waiting at most timeout in all. A caller whose context ends, whose time is
// up or whose server stops is answered at once; work already started cannot
// be interrupted and runs to its end in the background, keeping its slot, so
// no more than cap(slots) decodes ever run.
type decoder struct {
	work       func([]byte) ([]byte, error)
	slots      chan struct{}
	waiting    atomic.Int64
	maxWaiting int64
	timeout    time.Duration
	stopped    chan struct{}
	stopOnce   sync.Once
}

func newDecoder(work func([]byte) ([]byte, error), decoders int, timeout time.Duration) *decoder {
	if decoders <= 0 {
		decoders = DefaultDecoders()
	}
	if timeout <= 0 {
		timeout = DefaultDecodeTimeout
	}
	return &decoder{work: work, slots: make(chan struct{}, decoders), maxWaiting: int64(WaitingPerDecoder * decoders),
		timeout: timeout, stopped: make(chan struct{})}
}

// result is what a piece of work returned.
type result struct {
	out []byte
	err error
}

// run does the work on data once a slot is free and returns its result, or
// fails: ErrDecodersBusy when too many wait already, ErrDecodeTimeout when
// the time is up, ErrDecodeStopped once stop was called, ctx's error when it
// ends (the client went away).
func (d *decoder) run(ctx context.Context, data []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, d.timeout, ErrDecodeTimeout)
	defer cancel()
	if err := d.acquire(ctx); err != nil {
		return nil, err
	}
	done := make(chan result, 1) // the work never blocks on a caller that left
	go func() {
		defer func() { <-d.slots }()
		done <- d.do(data)
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-d.stopped:
		return nil, ErrDecodeStopped
	}
}

// acquire takes a slot, waiting as long as ctx lets it.
func (d *decoder) acquire(ctx context.Context) error {
	if d.waiting.Add(1) > d.maxWaiting {
		d.waiting.Add(-1)
		return ErrDecodersBusy
	}
	defer d.waiting.Add(-1)
	select {
	case d.slots <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-d.stopped:
		return ErrDecodeStopped
	}
	// A slot and an end may have come together: the end wins.
	if err := d.ended(ctx); err != nil {
		<-d.slots
		return err
	}
	return nil
}

// ended returns why the caller must stop waiting, or nil.
func (d *decoder) ended(ctx context.Context) error {
	select {
	case <-d.stopped:
		return ErrDecodeStopped
	default:
		return context.Cause(ctx)
	}
}

// do runs the work, turning a panic (a decoder's bug on some input) into an
// error, since no request's recovery reaches this goroutine.
func (d *decoder) do(data []byte) (r result) {
	defer func() {
		if p := recover(); p != nil {
			r = result{err: fmt.Errorf("decoding an avatar panicked: %v", p)}
		}
	}()
	out, err := d.work(data)
	return result{out, err}
}

// stop answers every caller waiting, and every later one, with
// ErrDecodeStopped.
func (d *decoder) stop() { d.stopOnce.Do(func() { close(d.stopped) }) }
