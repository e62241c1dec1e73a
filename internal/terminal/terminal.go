// Package terminal bridges a WebSocket to a shell running with a TTY in a
// sandbox. A terminal is a session that outlives its socket: a client that
// drops reattaches within the grace with the session's id and gets the
// output kept meanwhile. The protocol (docs/terminal.md): binary frames
// carry raw terminal bytes both ways; text frames carry JSON control
// messages:
//
//	client → server  {"type":"resize","cols":120,"rows":40}
//	                 {"type":"close"}                                hang up now
//	server → client  {"type":"session","id":"...","grace":60}         first, on every socket
//	                 (with "recording":true when the session is recorded: record.go)
//	                 {"type":"exit","code":0}
//	                 {"type":"error","detail":"..."}                 the session goes on
//	                 {"type":"error","detail":"...","status":403}    the socket closes with 4403
//	                 {"type":"expiring","reason":"idle"|"lifetime","seconds":60}
//	                 {"type":"detached","reason":"elsewhere"}        another socket took over; closes with 4000
//	                 {"type":"watchers","watchers":[...]}            who watches (shared terminals, watch.go)
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
	"tuxlab/internal/recording"
	"tuxlab/internal/sandbox"
)

// Options tune a Bridge.
type Options struct {
	IdleTimeout   time.Duration // no input for this long closes the terminal (default 15m)
	WarnBefore    time.Duration // how long before an idle close or the sandbox's end to warn (default 60s, at most half the idle timeout)
	PingInterval  time.Duration // keep-alive pings, and how often Owner.Check runs (default 30s)
	TouchInterval time.Duration // how often a terminal with new input records activity on its sandbox (default 30s)
	MaxMessage    int64         // largest frame a client may send (default 64 KiB)
	MaxPerSandbox int           // terminals open at once on one sandbox, detached ones included (default 8)
	// Grace is how long a terminal whose socket dropped keeps its shell for
	// a client to reattach; 0 hangs up at once.
	Grace time.Duration
	// Describe tells what an error that ends a terminal means to its client:
	// a status and a detail safe to show. The HTTP layer's mapping of error
	// kinds goes here; the default says 500 and nothing more.
	Describe func(err error) (status int, detail string)
	// Recordings keeps the sessions whose Owner.Record is set (nil: none is
	// recorded); their output is written every RecordFlush (default 5s) and
	// at their end, at most RecordMaxBytes of it (default 2 MiB).
	Recordings     Recordings
	RecordFlush    time.Duration
	RecordMaxBytes int64
	Now            func() time.Time
	Log            *slog.Logger
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
	if o.RecordFlush <= 0 {
		o.RecordFlush = 5 * time.Second
	}
	if o.RecordMaxBytes <= 0 {
		o.RecordMaxBytes = recording.DefaultMaxBytes
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
	open    map[int64]int  // places taken per sandbox id
	reg     *registry      // terminal sessions, attached or not
	closing error          // set by Shutdown: no new terminal
	places  sync.WaitGroup // one per place taken, until given back
}

// NewBridge returns a Bridge that records activity on sandboxes.
func NewBridge(sandboxes Sandboxes, o Options) *Bridge {
	o.defaults()
	return &Bridge{sandboxes: sandboxes, opt: o, open: map[int64]int{}, reg: newRegistry()}
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

// CloseUser ends every terminal of user userID, detached ones included:
// each attached client gets why (see Refuse) and its socket closes, and the
// shells end with what they started. It does not wait for them.
func (b *Bridge) CloseUser(userID int64, why error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.reg.user(userID) {
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
	for _, t := range b.reg.all() {
		t.end(b.closing)
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
	b.reg.add(t)
	if b.closing != nil {
		t.end(b.closing)
	}
}

func (b *Bridge) unregister(t *term) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reg.remove(t)
}

// Has reports whether session id is open (attached or not), userID's on
// sandbox sandboxID: another user's session, or one on another sandbox, is
// unknown.
func (b *Bridge) Has(id string, userID, sandboxID int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reg.lookup(id, userID, sandboxID) != nil
}

// Owner is whose terminal it is.
type Owner struct {
	UserID int64
	// Check tells whether the owner still may use the terminal, for changes
	// CloseUser does not hear of (made by another process). It runs when the
	// terminal starts and every PingInterval; an error ends the terminal with
	// that reason. nil: never.
	Check func(ctx context.Context) error
	// Record, when set, is the recording to make of a new session (Serve);
	// a reattach keeps the session's own.
	Record *recording.Recording
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
	ID      string `json:"id,omitempty"`
	Grace   *int   `json:"grace,omitempty"`
	// Shared terminals (watch.go).
	Watchers []Watcher `json:"watchers,omitzero"` // an empty list is sent: nobody watches now
	Owner    string    `json:"owner,omitempty"`
	Typing   *bool     `json:"typing,omitempty"`
	// ContainerID is the shared sandbox, told to its guests (their preview).
	ContainerID int64 `json:"container_id,omitempty"`
	// Recording is set in the session message of a recorded session.
	Recording bool `json:"recording,omitempty"`
}

// MaxSize bounds the terminal size a client may ask for.
const MaxSize = 1000

// Serve starts a terminal session on sess, a shell in sandbox c, and serves
// conn on it until the socket closes or leaves; release gives the session's
// place back (see Reserve) once it has ended. The session runs on after its
// socket leaves: until the shell exits, the client closes it (the close
// message or a normal close), the grace passes with no socket attached
// (Attach), the idle limit passes, the sandbox ends, or it is ended
// (CloseUser, Shutdown, Owner.Check). Ending it hangs the shell up; the
// sessions still open when the server stops end with Shutdown.
func (b *Bridge) Serve(ctx context.Context, conn *websocket.Conn, sess sandbox.Session, c *sandbox.Container, owner Owner, release func()) {
	t := newTerm(b, sess, c, owner, release)
	b.register(t)
	go t.run()
	b.serveSocket(ctx, t, conn, false, 0, 0)
}

// Attach serves conn on session id, when it is the owner's on sandbox
// sandboxID and still open, until the socket closes or leaves (as Serve):
// the client gets the session message, the output kept, and a redraw at
// cols × rows; a socket attached before is told it was taken over and
// closes with CloseTakenOver. Owner replaces the session's owner (its Check
// uses the new socket's credentials). Attach reports false, leaving conn
// alone, when there is no such session.
func (b *Bridge) Attach(ctx context.Context, conn *websocket.Conn, id string, sandboxID int64, owner Owner, cols, rows uint) bool {
	b.mu.Lock()
	t := b.reg.lookup(id, owner.UserID, sandboxID)
	b.mu.Unlock()
	if t == nil {
		return false
	}
	t.mu.Lock()
	t.owner = owner
	t.mu.Unlock()
	return b.serveSocket(ctx, t, conn, true, cols, rows)
}

// serveSocket attaches conn to t and serves it until it closes or leaves;
// reattach: redraw at cols × rows. It reports false, leaving conn alone,
// when t has ended before it attached, unless t is new (Serve): its client
// is then told how it ended.
func (b *Bridge) serveSocket(ctx context.Context, t *term, conn *websocket.Conn, reattach bool, cols, rows uint) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conn.SetReadLimit(b.opt.MaxMessage)
	s := newSocket(conn)
	_, ok := t.attach(ctx, s)
	if ok && len(t.watchers()) > 0 {
		t.announceWatchers() // a reload shows who watches
	}
	if !ok {
		if !reattach {
			<-t.ending
			t.tellEnd(s)
			conn.CloseNow()
		}
		return !reattach
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.keepAlive(ctx, b.opt.PingInterval, cancel) })
	wg.Go(func() { s.pumpReplies(ctx) })
	if reattach {
		wg.Go(func() { t.redraw(ctx, cols, rows) })
	}
	closed := t.pumpInput(ctx, s)
	cancel()
	wg.Wait()
	if closed {
		t.endWith("closed")
		<-t.done
	} else {
		t.detach(s)
	}
	s.waitHandoff()
	conn.CloseNow()
	return true
}

// CloseTakenOver is the close code of a socket whose session another socket
// took over (a second tab): its client should not reconnect by itself.
const CloseTakenOver websocket.StatusCode = 4000

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
	refuse(ctx, conn, status, detail)
}

// refuse is Refuse without the final CloseNow, for a caller that writes to
// conn under a lock of its own.
func refuse(ctx context.Context, conn *websocket.Conn, status int, detail string) {
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
