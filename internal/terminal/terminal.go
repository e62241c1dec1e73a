// Package terminal bridges a WebSocket to a shell running with a TTY in a
// sandbox. The protocol (docs/terminal.md): binary frames carry raw terminal
// bytes both ways; text frames carry JSON control messages:
//
//	client → server  {"type":"resize","cols":120,"rows":40}
//	server → client  {"type":"exit","code":0}
//	                 {"type":"error","detail":"..."}
//	                 {"type":"expiring","reason":"idle"|"lifetime","seconds":60}
package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/coder/websocket"

	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
)

// Options tune a Bridge.
type Options struct {
	IdleTimeout   time.Duration // no input for this long closes the terminal (default 15m)
	WarnBefore    time.Duration // how long before an idle close or the sandbox's end to warn (default 60s, at most half the idle timeout)
	PingInterval  time.Duration // keep-alive pings (default 30s)
	TouchInterval time.Duration // how often input refreshes the sandbox's activity (default 30s)
	MaxMessage    int64         // largest frame a client may send (default 64 KiB)
	MaxPerSandbox int           // terminals open at once on one sandbox (default 8)
	Now           func() time.Time
	Log           *slog.Logger
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

// Bridge serves terminals.
type Bridge struct {
	sandboxes Sandboxes
	opt       Options

	mu   sync.Mutex
	open map[int64]int // terminals open per sandbox id
}

// NewBridge returns a Bridge that records activity on sandboxes.
func NewBridge(sandboxes Sandboxes, o Options) *Bridge {
	o.defaults()
	return &Bridge{sandboxes: sandboxes, opt: o, open: map[int64]int{}}
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
// taken; the caller gives it back with the returned release.
func (b *Bridge) Reserve(containerID int64) (release func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open[containerID] >= b.opt.MaxPerSandbox {
		return nil, errs.Errorf(errs.Conflict, "Too many terminals open on this sandbox (at most %d): close one first", b.opt.MaxPerSandbox)
	}
	b.open[containerID]++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.open[containerID]--; b.open[containerID] <= 0 {
				delete(b.open, containerID)
			}
		})
	}, nil
}

// control is a text frame.
type control struct {
	Type    string `json:"type"`
	Cols    uint   `json:"cols,omitempty"`
	Rows    uint   `json:"rows,omitempty"`
	Code    *int   `json:"code,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Seconds *int   `json:"seconds,omitempty"`
}

// MaxSize bounds the terminal size a client may ask for.
const MaxSize = 1000

// Serve runs one terminal until the shell exits, the client leaves, the idle
// limit passes or the sandbox ends. It closes both ends.
func (b *Bridge) Serve(ctx context.Context, conn *websocket.Conn, sess sandbox.Session, c *sandbox.Container) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer sess.Close()
	conn.SetReadLimit(b.opt.MaxMessage)
	t := &term{b: b, conn: conn, sess: sess, c: c, lastInput: b.opt.Now(), lastTouch: b.opt.Now(),
		resize: resizer{wake: make(chan struct{}, 1)}}

	var wg sync.WaitGroup
	wg.Go(func() { t.pumpOutput(ctx) }) // engine → client
	wg.Go(func() { t.keepAlive(ctx, cancel) })
	wg.Go(func() { t.watchDeadlines(ctx, cancel) })
	wg.Go(func() { t.applyResizes(ctx) })
	t.pumpInput(ctx) // client → engine, until the client leaves or ctx ends
	cancel()
	sess.Close()
	wg.Wait()
}

type term struct {
	b    *Bridge
	conn *websocket.Conn
	sess sandbox.Session
	c    *sandbox.Container

	resize resizer

	mu        sync.Mutex // guards the fields below and serialises writes
	lastInput time.Time
	lastTouch time.Time
	warned    string
}

// resizer holds the latest size a client asked for until the engine takes
// it: one engine resize at a time per terminal, and however many messages
// arrive meanwhile, only the last one's size is applied next.
type resizer struct {
	mu         sync.Mutex
	cols, rows uint
	pending    bool
	wake       chan struct{} // capacity 1: a size is waiting
}

// set records a size, replacing any not applied yet.
func (r *resizer) set(cols, rows uint) {
	r.mu.Lock()
	r.cols, r.rows, r.pending = cols, rows, true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default: // already signalled
	}
}

// take returns the waiting size, if any.
func (r *resizer) take() (cols, rows uint, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok, r.pending = r.pending, false
	return r.cols, r.rows, ok
}

// applyResizes gives the engine the latest size, one call at a time, so a
// flood of resize messages neither keeps the engine busy nor holds up input.
func (t *term) applyResizes(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.resize.wake:
		}
		cols, rows, ok := t.resize.take()
		if !ok {
			continue
		}
		if err := t.sess.Resize(ctx, cols, rows); err != nil && ctx.Err() == nil {
			t.sendControl(ctx, control{Type: "error", Detail: "Could not resize the terminal"})
		}
	}
}

func (t *term) send(ctx context.Context, typ websocket.MessageType, b []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return t.conn.Write(wctx, typ, b)
}

func (t *term) sendControl(ctx context.Context, m control) error {
	b, _ := json.Marshal(m)
	return t.send(ctx, websocket.MessageText, b)
}

// pumpOutput copies the shell's output to the client; when the shell ends it
// sends its exit code and closes the socket normally.
func (t *term) pumpOutput(ctx context.Context) {
	buf := make([]byte, 32<<10)
	for {
		n, err := t.sess.Read(buf)
		if n > 0 {
			if werr := t.send(ctx, websocket.MessageBinary, buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return // the client left first
			}
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			code, werr := t.sess.Wait(wctx)
			cancel()
			if werr != nil || !errors.Is(err, io.EOF) {
				code = -1
			}
			t.sendControl(ctx, control{Type: "exit", Code: &code})
			t.conn.Close(websocket.StatusNormalClosure, "shell exited")
			return
		}
	}
}

// pumpInput reads client frames: raw input for the shell, or control messages.
func (t *term) pumpInput(ctx context.Context) {
	for {
		typ, data, err := t.conn.Read(ctx)
		if err != nil {
			return
		}
		now := t.b.opt.Now()
		t.mu.Lock()
		t.lastInput, t.warned = now, ""
		touch := now.Sub(t.lastTouch) >= t.b.opt.TouchInterval
		if touch {
			t.lastTouch = now
		}
		t.mu.Unlock()
		if touch {
			if c, err := t.b.sandboxes.Touch(ctx, t.c.ID); err == nil {
				t.mu.Lock()
				t.c = c
				t.mu.Unlock()
			}
		}
		if typ == websocket.MessageBinary {
			if _, err := t.sess.Write(data); err != nil {
				return
			}
			continue
		}
		var m control
		if err := json.Unmarshal(data, &m); err != nil {
			t.sendControl(ctx, control{Type: "error", Detail: "Text frames must be JSON control messages; send terminal input as binary frames"})
			continue
		}
		switch m.Type {
		case "resize":
			if m.Cols < 1 || m.Rows < 1 || m.Cols > MaxSize || m.Rows > MaxSize {
				t.sendControl(ctx, control{Type: "error", Detail: "resize needs cols and rows from 1 to 1000"})
				continue
			}
			t.resize.set(m.Cols, m.Rows)
		default:
			t.sendControl(ctx, control{Type: "error", Detail: "Unknown control message type " + m.Type})
		}
	}
}

// keepAlive pings the client; a client that does not answer is gone.
func (t *term) keepAlive(ctx context.Context, cancel context.CancelFunc) {
	tick := time.NewTicker(t.b.opt.PingInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			pctx, pcancel := context.WithTimeout(ctx, t.b.opt.PingInterval)
			err := t.conn.Ping(pctx)
			pcancel()
			if err != nil {
				cancel()
				return
			}
		}
	}
}

// watchDeadlines warns before the terminal's idle limit and before the
// sandbox's own end (idle stop or lifetime), then closes at the idle limit.
func (t *term) watchDeadlines(ctx context.Context, cancel context.CancelFunc) {
	step := min(t.b.opt.WarnBefore/4, time.Second)
	tick := time.NewTicker(max(step, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := t.b.opt.Now()
		t.mu.Lock()
		idleAt := t.lastInput.Add(t.b.opt.IdleTimeout)
		endAt, reason := t.b.sandboxes.Deadline(t.c)
		if idleAt.Before(endAt) {
			endAt, reason = idleAt, "idle"
		}
		warned := t.warned
		t.mu.Unlock()
		left := endAt.Sub(now)
		if !now.Before(idleAt) {
			t.conn.Close(websocket.StatusNormalClosure, "idle")
			cancel()
			return
		}
		if left <= t.b.opt.WarnBefore && warned != reason {
			secs := int(left.Round(time.Second).Seconds())
			if t.sendControl(ctx, control{Type: "expiring", Reason: reason, Seconds: &secs}) == nil {
				t.mu.Lock()
				t.warned = reason
				t.mu.Unlock()
			}
		}
	}
}
