package profile

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gate is image work that waits to be let through, counting how much of it
// runs at once.
type gate struct {
	started chan struct{} // one send per piece of work that starts
	open    chan struct{} // closed to let every piece through
	running atomic.Int32
	most    atomic.Int32
}

func newGate() *gate { return &gate{started: make(chan struct{}, 100), open: make(chan struct{})} }

func (g *gate) work(data []byte) ([]byte, error) {
	n := g.running.Add(1)
	defer g.running.Add(-1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	g.started <- struct{}{}
	<-g.open
	if string(data) == "panic" {
		panic("a decoder's bug")
	}
	return append([]byte("png of "), data...), nil
}

// TestDecoderBounds: one decode at once here, four callers waiting, the
// fifth turned away; a caller whose context ends, whose time is up or whose
// server stops is answered while the work still runs, and the work keeps its
// slot until it ends.
func TestDecoderBounds(t *testing.T) {
	g := newGate()
	d := newDecoder(g.work, 1, time.Hour)
	ctx := context.Background()
	type answer struct {
		out string
		err error
	}
	answers := make(chan answer, 10)
	call := func(ctx context.Context, data string) {
		out, err := d.run(ctx, []byte(data))
		answers <- answer{string(out), err}
	}
	go call(ctx, "first")
	<-g.started
	for range WaitingPerDecoder {
		go call(ctx, "waiting")
	}
	for d.waiting.Load() < WaitingPerDecoder {
		time.Sleep(time.Millisecond) // until all of them wait
	}
	if _, err := d.run(ctx, []byte("one too many")); !errors.Is(err, ErrDecodersBusy) {
		t.Fatalf("a caller past the queue: %v", err)
	}
	close(g.open)
	for range 1 + WaitingPerDecoder {
		if a := <-answers; a.err != nil || !strings.HasPrefix(a.out, "png of ") {
			t.Fatalf("answer %+v", a)
		}
	}
	if m := g.most.Load(); m != 1 {
		t.Fatalf("%d decodes ran at once, want 1", m)
	}

	// A panic in the work is an error, not a crash.
	if _, err := d.run(ctx, []byte("panic")); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("panic: %v", err)
	}
	<-g.started
}

func TestDecoderAnswersWhileTheWorkRuns(t *testing.T) {
	for _, tt := range []struct {
		name string
		end  func(d *decoder, cancel context.CancelFunc)
		want error
	}{
		{"client went away", func(d *decoder, cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"time is up", func(*decoder, context.CancelFunc) {}, ErrDecodeTimeout},
		{"server stops", func(d *decoder, cancel context.CancelFunc) { d.stop() }, ErrDecodeStopped},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate()
			timeout := time.Hour
			if tt.want == ErrDecodeTimeout {
				timeout = 50 * time.Millisecond
			}
			d := newDecoder(g.work, 1, timeout)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var wg sync.WaitGroup
			var first, second error
			wg.Add(2)
			go func() { defer wg.Done(); _, first = d.run(ctx, []byte("a")) }()
			<-g.started
			go func() { defer wg.Done(); _, second = d.run(ctx, []byte("b")) }() // waits for the slot
			for d.waiting.Load() < 1 {
				time.Sleep(time.Millisecond)
			}
			tt.end(d, cancel)
			wg.Wait() // both answered, the work still held at the gate
			if !errors.Is(first, tt.want) || !errors.Is(second, tt.want) {
				t.Fatalf("answers %v and %v, want %v", first, second, tt.want)
			}
			if g.running.Load() != 1 {
				t.Fatal("the work did not keep running")
			}
			// The slot is held until the work ends, then free again.
			close(g.open)
			if tt.want == ErrDecodeStopped {
				if _, err := d.run(context.Background(), []byte("c")); !errors.Is(err, ErrDecodeStopped) {
					t.Fatalf("after stop: %v", err)
				}
				return
			}
			d.timeout = time.Hour
			if out, err := d.run(context.Background(), []byte("c")); err != nil || string(out) != "png of c" {
				t.Fatalf("after the work ended: %q, %v", out, err)
			}
		})
	}
}
