package terminal

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"
)

// slowShell is a shell whose first engine resize waits for release; it
// records every size the engine was given.
type slowShell struct {
	io.ReadWriteCloser
	started chan struct{} // closed when the first resize begins
	release chan struct{}

	mu    sync.Mutex
	sizes [][2]uint
}

func (s *slowShell) Resize(ctx context.Context, cols, rows uint) error {
	s.mu.Lock()
	s.sizes = append(s.sizes, [2]uint{cols, rows})
	first := len(s.sizes) == 1
	s.mu.Unlock()
	if first {
		close(s.started)
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (s *slowShell) Wait(context.Context) (int, error) { return 0, nil }

// TestRedrawKeepsTheClientsSize: a client that reattaches at one size (a
// page whose terminal opened hidden, at a default size) and sends its real
// size while the redraw runs ends with its real size, not the redraw's.
func TestRedrawKeepsTheClientsSize(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // only guards against a hung test
	defer cancel()
	shell := &slowShell{started: make(chan struct{}), release: make(chan struct{})}
	tm := &term{ctx: ctx, sess: shell, resize: newResizer()}
	go tm.applyResizes()
	go func() {
		// The redraw's first change is with the engine: the client's size
		// arrives now, before the redraw's second change.
		<-shell.started
		tm.resize.set(48, 41)
		close(shell.release)
	}()
	tm.redraw(ctx, 80, 24)
	if err := tm.resize.waitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	shell.mu.Lock()
	defer shell.mu.Unlock()
	if want := [][2]uint{{80, 23}, {48, 41}}; !slices.Equal(shell.sizes, want) {
		t.Fatalf("the engine was given the sizes %v, want %v (the client's last)", shell.sizes, want)
	}
}
