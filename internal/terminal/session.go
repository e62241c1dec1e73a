package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/coder/websocket"

	"tuxlab/internal/sandbox"
)

// term is one terminal being served.
type term struct {
	b     *Bridge
	conn  *websocket.Conn
	sess  sandbox.Session
	owner Owner

	resize *resizer

	endOnce sync.Once
	ending  chan struct{} // closed by end
	why     error         // why the terminal ends; set before ending closes

	// wmu serialises writes to conn and is held across one (up to its
	// timeout). Nothing on the input path takes it: replies to the client's
	// input go through replies, written by pumpReplies.
	wmu     sync.Mutex
	replies chan control

	mu        sync.Mutex // guards the fields below; never held across I/O
	c         *sandbox.Container
	lastInput time.Time // the last frame from the client
	untouched bool      // input came since keepTouched last recorded activity
	warned    string
}

// maxPendingReplies bounds the replies to the client's input waiting to be
// written; a client that sends bad frames faster than it reads loses some.
const maxPendingReplies = 16

func newTerm(b *Bridge, conn *websocket.Conn, sess sandbox.Session, c *sandbox.Container, owner Owner) *term {
	now := b.opt.Now()
	return &term{b: b, conn: conn, sess: sess, owner: owner, c: c, lastInput: now,
		resize: newResizer(), ending: make(chan struct{}), replies: make(chan control, maxPendingReplies)}
}

// end asks the terminal to end for reason why (the first reason wins); watch
// tells the client and closes. It never blocks.
func (t *term) end(why error) {
	t.endOnce.Do(func() {
		t.why = why
		close(t.ending)
	})
}

func (t *term) send(ctx context.Context, typ websocket.MessageType, b []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
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
		t.lastInput, t.warned, t.untouched = now, "", true
		t.mu.Unlock()
		if typ == websocket.MessageBinary {
			// What is typed after a resize sees the new size, as in a local
			// terminal: it waits for the resizes asked for before it.
			if t.resize.waitIdle(ctx) != nil {
				return
			}
			if _, err := t.sess.Write(data); err != nil {
				return
			}
			continue
		}
		var m control
		if err := json.Unmarshal(data, &m); err != nil {
			t.reply(control{Type: "error", Detail: "Text frames must be JSON control messages; send terminal input as binary frames"})
			continue
		}
		switch m.Type {
		case "resize":
			if m.Cols < 1 || m.Rows < 1 || m.Cols > MaxSize || m.Rows > MaxSize {
				t.reply(control{Type: "error", Detail: "resize needs cols and rows from 1 to 1000"})
				continue
			}
			t.resize.set(m.Cols, m.Rows)
		default:
			t.reply(control{Type: "error", Detail: "Unknown control message type " + m.Type})
		}
	}
}

// reply queues an answer to the client's input for pumpReplies, without
// waiting: when the queue is full it is dropped.
func (t *term) reply(m control) {
	select {
	case t.replies <- m:
	default:
	}
}

// pumpReplies writes the queued answers to the client's input, so that the
// input path never waits for a write to the client.
func (t *term) pumpReplies(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-t.replies:
			if t.sendControl(ctx, m) != nil {
				return
			}
		}
	}
}

// keepTouched records activity on the sandbox every TouchInterval when the
// client sent input since the last time, which moves the sandbox's idle stop
// forward. It runs apart from the input path: a slow database never holds a
// keystroke.
func (t *term) keepTouched(ctx context.Context) {
	tick := time.NewTicker(t.b.opt.TouchInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t.mu.Lock()
		due, id := t.untouched, t.c.ID
		t.untouched = false
		t.mu.Unlock()
		if !due {
			continue
		}
		c, err := t.b.sandboxes.Touch(ctx, id)
		t.mu.Lock()
		if err != nil {
			t.untouched = true // tried again at the next tick
		} else {
			t.c = c
		}
		t.mu.Unlock()
	}
}

// keepAlive pings the client (a client that does not answer is gone) and
// checks that the owner still may use the terminal: at once, then with
// every ping.
func (t *term) keepAlive(ctx context.Context, cancel context.CancelFunc) {
	tick := time.NewTicker(t.b.opt.PingInterval)
	defer tick.Stop()
	for {
		if t.owner.Check != nil {
			if err := t.owner.Check(ctx); err != nil && ctx.Err() == nil {
				t.end(err)
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pctx, pcancel := context.WithTimeout(ctx, t.b.opt.PingInterval)
		err := t.conn.Ping(pctx)
		pcancel()
		if err != nil {
			cancel()
			return
		}
	}
}

// watch ends the terminal when asked (end), and otherwise warns before the
// terminal's idle limit and before the sandbox's own end (idle stop or
// lifetime), then closes at the idle limit.
func (t *term) watch(ctx context.Context, cancel context.CancelFunc) {
	step := min(t.b.opt.WarnBefore/4, time.Second)
	tick := time.NewTicker(max(step, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.ending:
			status, detail := t.b.opt.Describe(t.why)
			Refuse(ctx, t.conn, status, detail)
			cancel()
			return
		case <-tick.C:
		}
		if !t.checkDeadlines(ctx) {
			t.conn.Close(websocket.StatusNormalClosure, "idle")
			cancel()
			return
		}
	}
}

// checkDeadlines sends the warning that is due, if any, and reports whether
// the terminal may go on (false: its idle limit has passed).
func (t *term) checkDeadlines(ctx context.Context) bool {
	now := t.b.opt.Now()
	t.mu.Lock()
	idleAt := t.lastInput.Add(t.b.opt.IdleTimeout)
	endAt, reason := t.b.sandboxes.Deadline(t.c)
	if idleAt.Before(endAt) {
		endAt, reason = idleAt, "idle"
	}
	warned := t.warned
	t.mu.Unlock()
	if !now.Before(idleAt) {
		return false
	}
	left := endAt.Sub(now)
	if left <= t.b.opt.WarnBefore && warned != reason {
		secs := int(left.Round(time.Second).Seconds())
		if t.sendControl(ctx, control{Type: "expiring", Reason: reason, Seconds: &secs}) == nil {
			t.mu.Lock()
			t.warned = reason
			t.mu.Unlock()
		}
	}
	return true
}
