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
	"sync/atomic"
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
	return serveWith(t, shell, fakeSandboxes{}, terminal.Options{})
}

// serveWith serves one terminal on shell, with sandboxes and options, and
// returns the client's end.
func serveWith(t *testing.T, shell sandbox.Session, sandboxes terminal.Sandboxes, opt terminal.Options) *websocket.Conn {
	t.Helper()
	b := terminal.NewBridge(sandboxes, opt)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		b.Serve(r.Context(), conn, shell, &sandbox.Container{ID: 1, Status: sandbox.StatusRunning}, terminal.Owner{UserID: 1}, nil)
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	// Every socket is first told its session.
	if typ, data, err := conn.Read(ctx); err != nil || typ != websocket.MessageText || !strings.Contains(string(data), `"type":"session"`) {
		t.Fatalf("the first message is %q (%v), not the session", data, err)
	}
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

// floodShell is a sandbox.Session that prints without end until stopped, then
// exits with 0; what it is sent goes to input.
type floodShell struct {
	*fakeShell
	stop     chan struct{}
	produced atomic.Int64 // bytes printed
}

func (f *floodShell) Read(p []byte) (int, error) {
	select {
	case <-f.stop:
		return 0, io.EOF
	case <-f.closed:
		return 0, io.EOF
	default:
	}
	n := copy(p, bytes.Repeat([]byte("o"), len(p)))
	f.produced.Add(int64(n))
	return n, nil
}

// TestInputDoesNotWaitForOutput: a client that does not read its output
// holds the server's write to it; what it types still reaches the shell at
// once, and the output then flows on to the shell's exit message (a write
// that waited out its timeout would have closed the socket).
func TestInputDoesNotWaitForOutput(t *testing.T) {
	t.Parallel()
	shell := &floodShell{fakeShell: newFakeShell(), stop: make(chan struct{})}
	conn := serveWith(t, shell, fakeSandboxes{}, terminal.Options{})
	conn.SetReadLimit(1 << 20)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // only guards against a hung test
	defer cancel()
	// The socket's buffers are full when the shell's output stops growing:
	// the server is then inside a write that waits for the client.
	for last, still := int64(-1), 0; still < 3; {
		time.Sleep(100 * time.Millisecond)
		if n := shell.produced.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	if err := conn.Write(ctx, websocket.MessageBinary, []byte("ls\r")); err != nil {
		t.Fatal(err)
	}
	if got := <-shell.input; string(got) != "ls\r" {
		t.Fatalf("the shell got %q", got)
	}
	close(shell.stop)
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("the output ended without the exit message: %v", err)
		}
		if typ == websocket.MessageText {
			if !strings.Contains(string(data), `"exit"`) {
				t.Fatalf("message %s", data)
			}
			return
		}
	}
}

// slowSandboxes is a Sandboxes whose Touch waits until released, and counts
// the calls.
type slowSandboxes struct {
	fakeSandboxes
	release chan struct{}
	touches chan int64
}

func (s slowSandboxes) Touch(ctx context.Context, id int64) (*sandbox.Container, error) {
	s.touches <- id
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &sandbox.Container{ID: id, Status: sandbox.StatusRunning}, nil
}

// TestTouchIsOffTheInputPath: input is recorded as activity on the sandbox
// in the background; while recording it hangs, keystrokes still reach the
// shell.
func TestTouchIsOffTheInputPath(t *testing.T) {
	t.Parallel()
	shell := newFakeShell()
	sb := slowSandboxes{release: make(chan struct{}), touches: make(chan int64, 64)}
	conn := serveWith(t, shell, sb, terminal.Options{TouchInterval: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // only guards against a hung test
	defer cancel()
	defer close(sb.release)
	send := func(s string) {
		t.Helper()
		if err := conn.Write(ctx, websocket.MessageBinary, []byte(s)); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-shell.input:
			if string(got) != s {
				t.Fatalf("the shell got %q, want %q", got, s)
			}
		case <-ctx.Done():
			t.Fatalf("%q never reached the shell while the sandbox's activity was being recorded", s)
		}
	}
	send("a")
	select {
	case id := <-sb.touches:
		if id != 1 {
			t.Fatalf("touched sandbox %d", id)
		}
	case <-ctx.Done():
		t.Fatal("input was never recorded as activity")
	}
	// Touch now hangs; typing goes on.
	for _, s := range []string{"b", "c", "d"} {
		send(s)
	}
}
