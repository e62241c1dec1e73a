// Package terminal bridges a WebSocket to a shell running with a TTY in a
// sandbox. The protocol (docs/terminal.md): binary frames carry raw terminal
// bytes both ways; text frames carry JSON control messages:
//
//	client → server  {"type":"resize","cols":120,"rows":40}
//	server → client  {"type":"exit","code":0}
//	                 {"type":"error","detail":"..."}                 the session goes on
//	                 {"type":"error","detail":"...","status":403}    the socket closes with 4403
//	                 {"type":"expiring","reason":"idle"|"lifetime","seconds":60}
package terminal

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
)

// Options tune a Bridge.
type Options struct {
	IdleTimeout   time.Duration // no input for this long closes the terminal (default 15m)
	WarnBefore    time.Duration // how long before an idle close or the sandbox's end to warn (default 60s, at most half the idle timeout)
	PingInterval  time.Duration // keep-alive pings, and how often Owner.Check runs (default 30s)
	TouchInterval time.Duration // how often a terminal with new input records activity on its sandbox (default 30s)
	MaxMessage    int64         // largest frame a client may send (default 64 KiB)
	MaxPerSandbox int           // terminals open at once on one sandbox (default 8)
	// Describe tells what an error that ends a terminal means to its client:
	// a status and a detail safe to show. The HTTP layer's mapping of error
	// kinds goes here; the default says 500 and nothing more.
	Describe func(err error) (status int, detail string)
	Now      func() time.Time
	Log      *slog.Logger
}

func (o *Options) defaults() {
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 15 * time.Minute
	}
	if o.WarnBefore <= 0 {
		o.WarnBefore = min(time.Minute, o.IdleTimeout/2)
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 30 * time.Second
	}
	if o.TouchInterval <= 0 {
		o.TouchInterval = 30 * time.Second
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = 64 << 10
	}
	if o.MaxPerSandbox <= 0 {
		o.MaxPerSandbox = 8
	}
	if o.Describe == nil {
		o.Describe = func(error) (int, string) { return http.StatusInternalServerError, "Internal server error" }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
}

// Sandboxes is what terminals need of the sandbox domain (*sandbox.Service).
type Sandboxes interface {
	// Touch records activity on sandbox id and returns it as it is now.
	Touch(ctx context.Context, id int64) (*sandbox.Container, error)
	// Deadline says when a running sandbox ends and why ("idle" or "lifetime").
	Deadline(c *sandbox.Container) (time.Time, string)
}

var _ Sandboxes = (*sandbox.Service)(nil)

// ErrShuttingDown is why terminals end when the server stops.
var ErrShuttingDown = &errs.Error{Kind: errs.Unavailable, RetryAfter: 5 * time.Second,
	Detail: "The server is shutting down: open the terminal again in a moment"}

// Bridge serves terminals. It knows every terminal it serves, by user, so a
// user's terminals can be ended at once (CloseUser) and all of them when the
// server stops (Shutdown).
type Bridge struct {
	sandboxes Sandboxes
	opt       Options

	mu      sync.Mutex
	open    map[int64]int            // places taken per sandbox id
	byUser  map[int64]map[*term]bool // terminals being served, per user
	closing error                    // set by Shutdown: no new terminal
	places  sync.WaitGroup           // one per place taken, until given back
}

// NewBridge returns a Bridge that records activity on sandboxes.
func NewBridge(sandboxes Sandboxes, o Options) *Bridge {
	o.defaults()
	return &Bridge{sandboxes: sandboxes, opt: o, open: map[int64]int{}, byUser: map[int64]map[*term]bool{}}
}

// Open counts the terminals open now, for metrics.
func (b *Bridge) Open() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, v := range b.open {
		n += v
	}
	return n
}

// Reserve takes one of a sandbox's terminal places, or refuses when all are
// taken or the server is shutting down; the caller gives it back with the
// returned release once the terminal has ended (Shutdown waits for that).
func (b *Bridge) Reserve(containerID int64) (release func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing != nil {
		return nil, b.closing
	}
	if b.open[containerID] >= b.opt.MaxPerSandbox {
		return nil, errs.Errorf(errs.Conflict, "Too many terminals open on this sandbox (at most %d): close one first", b.opt.MaxPerSandbox)
	}
	b.open[containerID]++
	b.places.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.open[containerID]--; b.open[containerID] <= 0 {
				delete(b.open, containerID)
			}
			b.places.Done()
		})
	}, nil
}

// CloseUser ends every terminal of user userID: each client gets why (see
// Refuse) and its socket closes, and the shells end with what they started.
// It does not wait for them.
func (b *Bridge) CloseUser(userID int64, why error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for t := range b.byUser[userID] {
		t.end(why)
	}
}

// Shutdown ends every terminal with ErrShuttingDown, refuses new ones, and
// waits until each has ended and given its place back (its processes
// killed), or ctx ends.
func (b *Bridge) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	if b.closing == nil {
		b.closing = ErrShuttingDown
	}
	for _, ts := range b.byUser {
		for t := range ts {
			t.end(b.closing)
		}
	}
	b.mu.Unlock()
	done := make(chan struct{})
	go func() {
		b.places.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// register records a terminal as served; one that comes after Shutdown ends at once.
func (b *Bridge) register(t *term) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byUser[t.owner.UserID] == nil {
		b.byUser[t.owner.UserID] = map[*term]bool{}
	}
	b.byUser[t.owner.UserID][t] = true
	if b.closing != nil {
		t.end(b.closing)
	}
}

func (b *Bridge) unregister(t *term) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if delete(b.byUser[t.owner.UserID], t); len(b.byUser[t.owner.UserID]) == 0 {
		delete(b.byUser, t.owner.UserID)
	}
}

// Owner is whose terminal it is.
type Owner struct {
	UserID int64
	// Check tells whether the owner still may use the terminal, for changes
	// CloseUser does not hear of (made by another process). It runs when the
	// terminal starts and every PingInterval; an error ends the terminal with
	// that reason. nil: never.
	Check func(ctx context.Context) error
}

// control is a text frame.
type control struct {
	Type    string `json:"type"`
	Cols    uint   `json:"cols,omitempty"`
	Rows    uint   `json:"rows,omitempty"`
	Code    *int   `json:"code,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Status  int    `json:"status,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Seconds *int   `json:"seconds,omitempty"`
}

// MaxSize bounds the terminal size a client may ask for.
const MaxSize = 1000

// Serve runs one terminal until the shell exits, the client leaves, the idle
// limit passes, the sandbox ends, or the terminal is ended (CloseUser,
// Shutdown, Owner.Check). It closes both ends; closing the session ends the
// shell's processes, and Serve returns once that is done.
func (b *Bridge) Serve(ctx context.Context, conn *websocket.Conn, sess sandbox.Session, c *sandbox.Container, owner Owner) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer sess.Close()
	// Whatever ends the terminal closes the shell's stream, which also ends
	// a write to the shell that waits.
	context.AfterFunc(ctx, func() { sess.Close() })
	conn.SetReadLimit(b.opt.MaxMessage)
	t := newTerm(b, conn, sess, c, owner)
	b.register(t)
	defer b.unregister(t)

	var wg sync.WaitGroup
	wg.Go(func() { t.pumpOutput(ctx) }) // engine → client
	wg.Go(func() { t.keepAlive(ctx, cancel) })
	wg.Go(func() { t.watch(ctx, cancel) })
	wg.Go(func() { t.applyResizes(ctx) })
	wg.Go(func() { t.pumpReplies(ctx) })
	wg.Go(func() { t.keepTouched(ctx) })
	t.pumpInput(ctx) // client → engine, until the client leaves or ctx ends
	cancel()
	sess.Close()
	wg.Wait()
}

// CloseCode is the close code of a terminal that ends with an error of the
// given status: 4000 + status, in the range RFC 6455 leaves to applications.
func CloseCode(status int) websocket.StatusCode { return websocket.StatusCode(4000 + status) }

// maxCloseReason is what a close frame holds of a reason, in bytes.
const maxCloseReason = 123

// Refuse ends a terminal with an error a browser can read (it sees nothing of
// a refused upgrade): a control message {"type":"error","detail":...,
// "status":N}, then a close with code CloseCode(N) and the detail as the
// reason, cut to what a close frame holds.
func Refuse(ctx context.Context, conn *websocket.Conn, status int, detail string) {
	defer conn.CloseNow()
	msg, _ := json.Marshal(control{Type: "error", Detail: detail, Status: status})
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if conn.Write(wctx, websocket.MessageText, msg) != nil {
		return
	}
	conn.Close(CloseCode(status), closeReason(detail))
}

// closeReason cuts s to maxCloseReason bytes without splitting a character.
func closeReason(s string) string {
	if len(s) <= maxCloseReason {
		return s
	}
	cut := maxCloseReason - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
