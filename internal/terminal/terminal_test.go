package terminal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/terminal"
)

// These tests run the bridge on a fake shell that misbehaves on purpose (a
// resize that hangs), beside the real-engine tests of internal/httpapi.

// fakeShell is a sandbox.Session whose first Resize waits until released.
type fakeShell struct {
	release chan struct{} // closed to let the first Resize return
	input   chan []byte   // what the shell was sent
	closed  chan struct{}
	once    sync.Once

	mu      sync.Mutex
	resizes [][2]uint
}

func newFakeShell() *fakeShell {
	return &fakeShell{release: make(chan struct{}), input: make(chan []byte, 16), closed: make(chan struct{})}
}

func (f *fakeShell) Read(p []byte) (int, error) { <-f.closed; return 0, io.EOF }

func (f *fakeShell) Write(p []byte) (int, error) {
	select {
	case f.input <- bytes.Clone(p):
	case <-f.closed:
		return 0, io.ErrClosedPipe
	}
	return len(p), nil
}

func (f *fakeShell) Close() error { f.once.Do(func() { close(f.closed) }); return nil }

func (f *fakeShell) Resize(ctx context.Context, cols, rows uint) error {
	f.mu.Lock()
	f.resizes = append(f.resizes, [2]uint{cols, rows})
	first := len(f.resizes) == 1
	f.mu.Unlock()
	if first {
		select {
		case <-f.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (f *fakeShell) Wait(context.Context) (int, error) { return 0, nil }

func (f *fakeShell) sizes() [][2]uint {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][2]uint(nil), f.resizes...)
}

type fakeSandboxes struct{}

func (fakeSandboxes) Touch(_ context.Context, id int64) (*sandbox.Container, error) {
	return &sandbox.Container{ID: id}, nil
}

func (fakeSandboxes) Deadline(*sandbox.Container) (time.Time, string) {
	return time.Now().Add(time.Hour), "idle"
}

// serveFake serves one terminal on shell and returns the client's end.
func serveFake(t *testing.T, shell *fakeShell) *websocket.Conn {
	t.Helper()
	b := terminal.NewBridge(fakeSandboxes{}, terminal.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		b.Serve(r.Context(), conn, shell, &sandbox.Container{ID: 1, Status: sandbox.StatusRunning}, terminal.Owner{UserID: 1})
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

// TestResizesAreCoalesced: while the engine takes its time over one resize,
// 5,000 more resize messages are read and merged into one engine call with
// the last size; input sent after them waits for it, so it sees that size.
func TestResizesAreCoalesced(t *testing.T) {
	t.Parallel()
	shell := newFakeShell()
	conn := serveFake(t, shell)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // only guards against a hung test
	defer cancel()
	const n = 5000
	size := func(i int) (uint, uint) { return uint(1 + i%1000), uint(1 + (i*7)%1000) }
	for i := range n {
		cols, rows := size(i)
		msg, _ := json.Marshal(map[string]any{"type": "resize", "cols": cols, "rows": rows})
		if err := conn.Write(ctx, websocket.MessageText, msg); err != nil {
			t.Fatal(err)
		}
	}
	// A message the server answers: once the answer is here, every resize
	// before it has been read.
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"bogus"}`)); err != nil {
		t.Fatal(err)
	}
	if _, data, err := conn.Read(ctx); err != nil || !strings.Contains(string(data), "Unknown control message type") {
		t.Fatalf("resize messages are not read while the engine resizes: %q %v (%d engine resizes asked)", data, err, len(shell.sizes()))
	}
	if err := conn.Write(ctx, websocket.MessageBinary, []byte("x")); err != nil {
		t.Fatal(err)
	}
	close(shell.release)
	select {
	case got := <-shell.input:
		if string(got) != "x" {
			t.Fatalf("the shell got %q", got)
		}
	case <-ctx.Done():
		t.Fatal("the input never reached the shell")
	}
	cols, rows := size(n - 1)
	if s := shell.sizes(); len(s) != 2 || s[1] != [2]uint{cols, rows} {
		t.Fatalf("%d resize messages made the engine resizes %v, want the one in flight, then %v; and input after them",
			n, s, [2]uint{cols, rows})
	}
}

// TestRefuseCutsTheCloseReason: a detail longer than a close frame holds is
// whole in the error message and cut, on a character boundary, in the close
// reason.
func TestRefuseCutsTheCloseReason(t *testing.T) {
	t.Parallel()
	detail := strings.Repeat("é", 100) // 200 bytes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if conn, err := websocket.Accept(w, r, nil); err == nil {
			terminal.Refuse(r.Context(), conn, 422, detail)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	_, data, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Type, Detail string
		Status       int
	}
	if err := json.Unmarshal(data, &m); err != nil || m.Type != "error" || m.Detail != detail || m.Status != 422 {
		t.Fatalf("message %s (%v)", data, err)
	}
	_, _, err = conn.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4422 || len(ce.Reason) > 123 || !utf8.ValidString(ce.Reason) ||
		!strings.HasPrefix(detail, strings.TrimSuffix(ce.Reason, "…")) || !strings.HasSuffix(ce.Reason, "…") {
		t.Fatalf("closed with %v", err)
	}
}
