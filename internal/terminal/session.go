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

// term is one terminal session: a shell that outlives its sockets. At most
// one socket is attached at a time; while none is, the shell runs on and its
// output is kept (out) for the next socket, until the grace ends.
type term struct {
	b         *Bridge
	id        string
	userID    int64
	sandboxID int64
	sess      sandbox.Session
	release   func() // gives the terminal's place back, once the shell is gone

	ctx    context.Context // the session's, cancelled once it ends
	cancel context.CancelFunc

	resize *resizer
	rec    *recorder // nil: not recorded

	endOnce sync.Once
	ending  chan struct{} // closed by end
	why     error         // why the terminal ends (nil: a hang-up); set before ending closes
	done    chan struct{} // closed once the session has ended, its shell gone

	mu         sync.Mutex // guards the fields below; never held across I/O
	owner      Owner
	c          *sandbox.Container
	att        *socket   // the socket attached now; nil while detached
	over       bool      // the session has ended: nothing attaches any more
	detachedAt time.Time // when the last socket left, while detached
	out        *ring     // the latest output, replayed to a socket that attaches
	exitCode   *int      // the shell's exit status, once it exited
	endNote    string    // the close reason of a terminal that ends without error
	lastInput  time.Time // the last frame from a client
	untouched  bool      // input came since keepTouched last recorded activity
	warned     string
	attachedAt time.Time       // when a socket attached last (a guest watches that terminal)
	guests     map[*guest]bool // who watches (watch.go)
}

// socket is one client's WebSocket attached to a session.
type socket struct {
	conn *websocket.Conn

	// wmu serialises writes to conn and is held across one (up to its
	// timeout). Nothing on the input path takes it: replies to the client's
	// input go through replies, written by pumpReplies.
	wmu     sync.Mutex
	replies chan control

	mu      sync.Mutex
	handoff chan struct{} // set when another socket took the session over; closed once this one is told
}

// maxPendingReplies bounds the replies to the client's input waiting to be
// written; a client that sends bad frames faster than it reads loses some.
const maxPendingReplies = 16

func newSocket(conn *websocket.Conn) *socket {
	return &socket{conn: conn, replies: make(chan control, maxPendingReplies)}
}

func (s *socket) send(ctx context.Context, typ websocket.MessageType, b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.write(ctx, typ, b)
}

// write writes one frame; the caller holds wmu.
func (s *socket) write(ctx context.Context, typ websocket.MessageType, b []byte) error {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return s.conn.Write(wctx, typ, b)
}

func (s *socket) sendControl(ctx context.Context, m control) error {
	b, _ := json.Marshal(m)
	return s.send(ctx, websocket.MessageText, b)
}

// reply queues an answer to the client's input for pumpReplies, without
// waiting: when the queue is full it is dropped.
func (s *socket) reply(m control) {
	select {
	case s.replies <- m:
	default:
	}
}

// pumpReplies writes the queued answers to the client's input, so that the
// input path never waits for a write to the client.
func (s *socket) pumpReplies(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.replies:
			if s.sendControl(ctx, m) != nil {
				return
			}
		}
	}
}

// keepAlive pings the client: one that does not answer is gone.
func (s *socket) keepAlive(ctx context.Context, every time.Duration, cancel context.CancelFunc) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pctx, pcancel := context.WithTimeout(ctx, every)
		err := s.conn.Ping(pctx)
		pcancel()
		if err != nil {
			cancel()
			return
		}
	}
}

// takenOver tells this socket that another took its session over, and
// closes it with CloseTakenOver. It runs apart: a socket that no longer
// answers holds neither the new one nor the session.
func (s *socket) takenOver(ctx context.Context) {
	s.mu.Lock()
	done := make(chan struct{})
	s.handoff = done
	s.mu.Unlock()
	go func() {
		defer close(done)
		s.sendControl(ctx, control{Type: "detached", Reason: "elsewhere"})
		s.conn.Close(CloseTakenOver, "The terminal is open elsewhere")
	}()
}

// waitHandoff waits until a takeover has told this socket, if one did.
func (s *socket) waitHandoff() {
	s.mu.Lock()
	done := s.handoff
	s.mu.Unlock()
	if done != nil {
		<-done
	}
}

func newTerm(b *Bridge, sess sandbox.Session, c *sandbox.Container, owner Owner, release func()) *term {
	if release == nil {
		release = func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &term{b: b, id: newSessionID(), userID: owner.UserID, sandboxID: c.ID, sess: sess, release: release,
		ctx: ctx, cancel: cancel, resize: newResizer(), ending: make(chan struct{}), done: make(chan struct{}),
		owner: owner, c: c, out: newRing(ReplaySize), lastInput: b.opt.Now(),
		rec: newRecorder(b.opt.Recordings, owner.Record, b.opt.RecordMaxBytes, b.opt.Now, b.opt.Log)}
}

// end asks the terminal to end for reason why (the first reason wins; nil
// is a hang-up without error); run tells the client and closes. It never
// blocks.
func (t *term) end(why error) {
	t.endOnce.Do(func() {
		t.why = why
		close(t.ending)
	})
}

// endWith ends the terminal without error, closing its socket normally with
// note as the reason.
func (t *term) endWith(note string) {
	t.mu.Lock()
	if t.endNote == "" {
		t.endNote = note
	}
	t.mu.Unlock()
	t.end(nil)
}

// run runs the session until it ends (see Bridge.Serve), then tells the
// attached client, hangs the shell up and gives the place back.
func (t *term) run() {
	defer t.release() // last: Shutdown waits for it
	defer close(t.done)
	defer t.b.unregister(t)
	// Whatever ends the session closes the shell's stream, which also ends
	// a write to the shell that waits.
	context.AfterFunc(t.ctx, func() { t.sess.Close() })
	var wg sync.WaitGroup
	wg.Go(t.pumpOutput)
	wg.Go(t.checkOwner)
	wg.Go(t.watch)
	wg.Go(t.applyResizes)
	wg.Go(t.keepTouched)
	wg.Go(func() { t.rec.keepFlushing(t.ctx, t.b.opt.RecordFlush) })
	<-t.ending
	t.mu.Lock()
	t.over = true
	s := t.att
	t.att = nil
	t.mu.Unlock()
	if s != nil {
		t.tellEnd(s)
	}
	t.cancel()
	t.sess.Close()
	wg.Wait()
	t.rec.finish() // before the place is given back: Shutdown waits for it
}

// tellEnd tells the attached client how the terminal ended and closes its
// socket: the shell's exit status, an error (as Refuse), or a normal close.
func (t *term) tellEnd(s *socket) {
	ctx := context.WithoutCancel(t.ctx)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	t.mu.Lock()
	code, note := t.exitCode, t.endNote
	t.mu.Unlock()
	switch {
	case t.why != nil:
		status, detail := t.b.opt.Describe(t.why)
		refuse(ctx, s.conn, status, detail)
	case code != nil:
		b, _ := json.Marshal(control{Type: "exit", Code: code})
		s.write(ctx, websocket.MessageText, b)
		s.conn.Close(websocket.StatusNormalClosure, "shell exited")
	default:
		if note == "" {
			note = "closed"
		}
		s.conn.Close(websocket.StatusNormalClosure, note)
	}
}

// attached is the socket attached now, or nil.
func (t *term) attached() *socket {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.att
}

var errDetached = errors.New("no socket is attached")

// sendControl sends m to the attached socket, if any.
func (t *term) sendControl(m control) error {
	s := t.attached()
	if s == nil {
		return errDetached
	}
	return s.sendControl(t.ctx, m)
}

// replayFrame is the most a replay sends in one frame.
const replayFrame = 32 << 10

// attach makes s the session's socket: it sends the session message and the
// output kept so far, before any new output, and tells the socket attached
// before, if any, that it was taken over. It reports false when the session
// has ended.
func (t *term) attach(ctx context.Context, s *socket) (replayed bool, ok bool) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	t.mu.Lock()
	if t.over {
		t.mu.Unlock()
		return false, false
	}
	old := t.att
	t.att, t.detachedAt = s, time.Time{}
	t.attachedAt = t.b.opt.Now()
	kept := t.out.Bytes()
	t.mu.Unlock()
	if old != nil {
		old.takenOver(context.WithoutCancel(t.ctx))
	}
	grace := int(t.b.opt.Grace.Round(time.Second) / time.Second)
	b, _ := json.Marshal(control{Type: "session", ID: t.id, Grace: &grace, Recording: t.rec.on()})
	if s.write(ctx, websocket.MessageText, b) != nil {
		return false, true
	}
	for len(kept) > 0 {
		n := min(len(kept), replayFrame)
		if s.write(ctx, websocket.MessageBinary, kept[:n]) != nil {
			return true, true
		}
		kept = kept[n:]
	}
	return true, true
}

// detach records that socket s has left without closing the terminal: the
// shell runs on for the grace (none: it is hung up at once).
func (t *term) detach(s *socket) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.att != s || t.over {
		return
	}
	t.att = nil
	t.detachedAt = t.b.opt.Now()
	if t.b.opt.Grace <= 0 {
		t.endNote = "detached"
		t.end(nil)
	}
}

// redraw makes a full-screen program draw its screen again for a socket that
// attached, at the client's size: the size changes (one row less, then the
// size), since the kernel tells the program of a change only. The relay
// copies a change in its own size to the shell's terminal when it is
// signalled; redrawPause lets it see the first change before the second.
// A size the client sends meanwhile (a page that opened its terminal hidden,
// at a default size, and fits it when shown) is the last word: the second
// change is left out, since the client's already made the program redraw.
func (t *term) redraw(ctx context.Context, cols, rows uint) {
	other := rows - 1
	if rows <= 1 {
		other = rows + 1
	}
	n := t.resize.set(cols, other)
	if t.resize.waitIdle(ctx) != nil {
		return
	}
	select {
	case <-time.After(redrawPause):
	case <-ctx.Done():
		return
	}
	t.resize.setIfLatest(n, cols, rows)
}

// redrawPause is how long redraw keeps the intermediate size.
const redrawPause = 150 * time.Millisecond

// pumpOutput copies the shell's output to the attached client, if any, and
// keeps it for a socket that attaches later; when the shell ends, the
// terminal ends with its exit status.
func (t *term) pumpOutput() {
	buf := make([]byte, 32<<10)
	for {
		n, err := t.sess.Read(buf)
		if n > 0 {
			t.mu.Lock()
			t.out.Write(buf[:n])
			t.feedGuests(buf[:n])
			s := t.att
			t.mu.Unlock()
			t.rec.output(buf[:n])
			if s != nil && s.send(t.ctx, websocket.MessageBinary, buf[:n]) != nil {
				s.conn.CloseNow() // the client is gone: its socket detaches
			}
		}
		if err != nil {
			if t.ctx.Err() != nil {
				return // the session ended first
			}
			wctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 10*time.Second)
			code, werr := t.sess.Wait(wctx)
			cancel()
			if errors.Is(werr, sandbox.ErrMachineRestarting) || errors.Is(werr, sandbox.ErrMachineStopped) {
				t.end(werr) // the socket says so, as a refusal does, and closes
				return
			}
			if werr != nil || !errors.Is(err, io.EOF) {
				code = -1
			}
			t.mu.Lock()
			t.exitCode = &code
			t.mu.Unlock()
			t.end(nil)
			return
		}
	}
}

// pumpInput reads the frames of socket s: raw input for the shell, or
// control messages. It reports whether the client closed the terminal (the
// close message, or a normal close of the socket) rather than left.
func (t *term) pumpInput(ctx context.Context, s *socket) (closed bool) {
	for {
		typ, data, err := s.conn.Read(ctx)
		if err != nil {
			return websocket.CloseStatus(err) == websocket.StatusNormalClosure
		}
		now := t.b.opt.Now()
		t.mu.Lock()
		t.lastInput, t.warned, t.untouched = now, "", true
		t.mu.Unlock()
		if typ == websocket.MessageBinary {
			// What is typed after a resize sees the new size, as in a local
			// terminal: it waits for the resizes asked for before it.
			if t.resize.waitIdle(ctx) != nil {
				return false
			}
			if _, err := t.sess.Write(data); err != nil {
				return false
			}
			continue
		}
		var m control
		if err := json.Unmarshal(data, &m); err != nil {
			s.reply(control{Type: "error", Detail: "Text frames must be JSON control messages; send terminal input as binary frames"})
			continue
		}
		switch m.Type {
		case "resize":
			if m.Cols < 1 || m.Rows < 1 || m.Cols > MaxSize || m.Rows > MaxSize {
				s.reply(control{Type: "error", Detail: "resize needs cols and rows from 1 to 1000"})
				continue
			}
			t.resize.set(m.Cols, m.Rows)
		case "close":
			return true
		default:
			s.reply(control{Type: "error", Detail: "Unknown control message type " + m.Type})
		}
	}
}

// keepTouched records activity on the sandbox every TouchInterval when a
// client sent input since the last time, which moves the sandbox's idle stop
// forward. It runs apart from the input path: a slow database never holds a
// keystroke.
func (t *term) keepTouched() {
	tick := time.NewTicker(t.b.opt.TouchInterval)
	defer tick.Stop()
	for {
		select {
		case <-t.ctx.Done():
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
		c, err := t.b.sandboxes.Touch(t.ctx, id)
		t.mu.Lock()
		if err != nil {
			t.untouched = true // tried again at the next tick
		} else {
			t.c = c
		}
		t.mu.Unlock()
	}
}

// checkOwner checks that the owner still may use the terminal, attached or
// not: at once, then every PingInterval.
func (t *term) checkOwner() {
	tick := time.NewTicker(t.b.opt.PingInterval)
	defer tick.Stop()
	for {
		t.mu.Lock()
		check := t.owner.Check
		t.mu.Unlock()
		if check != nil {
			if err := check(t.ctx); err != nil && t.ctx.Err() == nil {
				t.end(err)
				return
			}
		}
		select {
		case <-t.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// watch warns before the terminal's idle limit and before the sandbox's own
// end (idle stop or lifetime), then closes at the idle limit; it also ends a
// detached session whose grace has passed.
func (t *term) watch() {
	step := min(t.b.opt.WarnBefore/4, time.Second)
	tick := time.NewTicker(max(step, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-tick.C:
		}
		if note := t.checkDeadlines(); note != "" {
			t.endWith(note)
			return
		}
	}
}

// checkDeadlines sends the warning that is due, if any, and says why the
// terminal ends now, if it does: its idle limit or its grace has passed.
func (t *term) checkDeadlines() string {
	now := t.b.opt.Now()
	t.mu.Lock()
	idleAt := t.lastInput.Add(t.b.opt.IdleTimeout)
	endAt, reason := t.b.sandboxes.Deadline(t.c)
	if idleAt.Before(endAt) {
		endAt, reason = idleAt, "idle"
	}
	warned, detachedAt := t.warned, t.detachedAt
	t.mu.Unlock()
	if !now.Before(idleAt) {
		return "idle"
	}
	if !detachedAt.IsZero() && !now.Before(detachedAt.Add(t.b.opt.Grace)) {
		return "detached"
	}
	left := endAt.Sub(now)
	if left <= t.b.opt.WarnBefore && warned != reason {
		secs := int(left.Round(time.Second).Seconds())
		if t.sendControl(control{Type: "expiring", Reason: reason, Seconds: &secs}) == nil {
			t.mu.Lock()
			t.warned = reason
			t.mu.Unlock()
		}
	}
	return ""
}
