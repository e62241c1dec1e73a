package terminal_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/terminal"
)

// echoShell is a sandbox.Session that prints back what it is sent, until
// closed.
type echoShell struct {
	out    chan []byte
	closed chan struct{}
	once   sync.Once
}

func newEchoShell() *echoShell {
	return &echoShell{out: make(chan []byte, 64), closed: make(chan struct{})}
}

func (s *echoShell) Read(p []byte) (int, error) {
	select {
	case b := <-s.out:
		return copy(p, b), nil
	case <-s.closed:
		return 0, io.EOF
	}
}

func (s *echoShell) Write(p []byte) (int, error) {
	select {
	case s.out <- append([]byte(nil), p...):
		return len(p), nil
	case <-s.closed:
		return 0, io.ErrClosedPipe
	}
}

func (s *echoShell) Close() error                             { s.once.Do(func() { close(s.closed) }); return nil }
func (s *echoShell) Resize(context.Context, uint, uint) error { return nil }
func (s *echoShell) Wait(context.Context) (int, error)        { return 0, nil }
func (s *echoShell) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// sessionServer serves terminals of user 1 on sandbox 1 on a new echoShell
// each, or reattaches to ?session=; shells lists the shells started.
type sessionServer struct {
	url    string
	bridge *terminal.Bridge
	mu     sync.Mutex
	shells []*echoShell
}

func newSessionServer(t *testing.T, opt terminal.Options) *sessionServer {
	t.Helper()
	s := &sessionServer{bridge: terminal.NewBridge(fakeSandboxes{}, opt)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		owner := terminal.Owner{UserID: 1}
		if id := r.URL.Query().Get("session"); id != "" && s.bridge.Attach(r.Context(), conn, id, 1, owner, 80, 24) {
			return
		}
		sh := newEchoShell()
		s.mu.Lock()
		s.shells = append(s.shells, sh)
		s.mu.Unlock()
		s.bridge.Serve(r.Context(), conn, sh, &sandbox.Container{ID: 1, Status: sandbox.StatusRunning}, owner, nil)
	}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.bridge.Shutdown(ctx)
		srv.Close()
	})
	s.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	return s
}

// shell is the i-th shell started.
func (s *sessionServer) shell(i int) *echoShell {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shells[i]
}

// dial opens a socket (reattaching to session unless "") and returns it with
// the id of its session message.
func (s *sessionServer) dial(t *testing.T, session string) (*websocket.Conn, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := s.url
	if session != "" {
		u += "?session=" + session
	}
	conn, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	_, data, err := conn.Read(ctx)
	var m struct{ Type, ID string }
	if err != nil || json.Unmarshal(data, &m) != nil || m.Type != "session" || m.ID == "" {
		t.Fatalf("the first message is %q (%v)", data, err)
	}
	return conn, m.ID
}

// readUntil reads binary output until it contains want, and returns it.
func readUntil(t *testing.T, conn *websocket.Conn, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got strings.Builder
	for !strings.Contains(got.String(), want) {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("reading for %q: %v (got %q)", want, err, got.String())
		}
		if typ == websocket.MessageBinary {
			got.Write(data)
		}
	}
	return got.String()
}

// TestSessionGrace: with a grace, a dropped socket's shell waits for a
// reattach, which replays its output; without one (0), a dropped socket
// hangs the shell up at once and its id opens a new shell. The close message
// hangs up at once either way.
func TestSessionGrace(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		grace    time.Duration
		reattach bool
	}{
		{"a minute", time.Minute, true},
		{"none", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSessionServer(t, terminal.Options{Grace: tt.grace})
			conn, id := s.dial(t, "")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn.Write(ctx, websocket.MessageBinary, []byte("before-drop"))
			readUntil(t, conn, "before-drop")
			conn.CloseNow()
			if !tt.reattach {
				for !s.shell(0).isClosed() {
					time.Sleep(10 * time.Millisecond)
				}
			}
			again, got := s.dial(t, id)
			if (got == id) != tt.reattach {
				t.Fatalf("reattaching to %s gave session %s (grace %s)", id, got, tt.grace)
			}
			if tt.reattach {
				readUntil(t, again, "before-drop") // the replay
				if s.shell(0).isClosed() {
					t.Fatal("the shell was hung up while detached")
				}
			}
			again.Write(ctx, websocket.MessageText, []byte(`{"type":"close"}`))
			if _, _, err := again.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("after the close message: %v", err)
			}
			for s.bridge.Open() > 0 {
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
