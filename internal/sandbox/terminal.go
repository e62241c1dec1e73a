package sandbox

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"time"
)

// Terminal opens a shell with a TTY in sandbox c, which the caller got from
// Get (so ownership is checked and its state is the engine's); it must be
// running. The terminal is cols × rows before the shell starts (sizedShell).
// Closing the session ends the shell and every process started from it: the
// shell carries a mark (see reap), and Close kills what has it. Close waits
// for that, at most a few seconds.
func (s *Service) Terminal(ctx context.Context, c *Container, cols, rows uint) (Session, *Container, error) {
	if c.Status != StatusRunning {
		return nil, nil, ErrNotRunning
	}
	t, err := s.store.FindTemplateByID(ctx, c.TemplateID)
	if err != nil {
		return nil, nil, err
	}
	rt, err := s.rt()
	if err != nil {
		return nil, nil, err
	}
	// A sandbox from the warm pool comes with its first shell started.
	ts := s.pool.takeShell(c.EngineID)
	if ts != nil {
		ts.Resize(ctx, cols, rows) // held until its wrapper has set the initial size
	} else if ts, err = s.openShell(ctx, rt, t, c, cols, rows); err != nil {
		return nil, nil, err
	}
	c, err = s.Touch(ctx, c.ID)
	if err != nil {
		ts.Close()
		return nil, nil, err
	}
	return ts, c, nil
}

// openShell starts t's shell with a TTY of cols × rows in container c.
func (s *Service) openShell(ctx context.Context, rt Runtime, t *Template, c *Container, cols, rows uint) (*terminalSession, error) {
	m := newMark()
	sess, err := rt.Exec(ctx, c.EngineID, ExecSpec{Cmd: sizedShell(t.Shell, cols, rows), User: t.User, TTY: true, Cols: cols, Rows: rows,
		// A login program would set USER and LOGNAME; the engine sets only HOME.
		Env: []string{"TERM=xterm-256color", "USER=" + t.User, "LOGNAME=" + t.User, m.env()}})
	if err != nil {
		return nil, err
	}
	// Docker 20.10 leaves an exec running when its stream closes, with
	// everything it started: the pid limit would run out after some dozens
	// of terminals. reap ends them on every engine.
	ctx = context.WithoutCancel(ctx)
	return &terminalSession{Session: sess, ctx: ctx, end: func() { s.reap(ctx, rt, t, c, m) }, ready: make(chan struct{})}, nil
}

// sizeWrapper sets the terminal's size ($1 columns, $2 rows), says so with
// readyMarker, and then becomes the shell (the rest of its arguments). A
// missing stty changes nothing.
const sizeWrapper = `stty cols "$1" rows "$2" 2>/dev/null; printf '\033]tuxlab;sized\007'; shift 2; exec "$@"`

// readyMarker is what sizeWrapper prints once the size is set: an OSC
// sequence, which terminals ignore should one ever get through.
var readyMarker = []byte("\x1b]tuxlab;sized\x07")

// sizedShell is the command that starts shell in a terminal of cols × rows.
// Engines before API 1.42 (Docker 20.10) ignore an exec's initial size, and a
// resize can only follow the start, racing the shell's first output; setting
// the size inside the sandbox before the shell starts holds on every engine.
func sizedShell(shell []string, cols, rows uint) []string {
	return append([]string{"/bin/sh", "-c", sizeWrapper, "tuxlab-terminal",
		strconv.FormatUint(uint64(cols), 10), strconv.FormatUint(uint64(rows), 10)}, shell...)
}

// terminalSession is a terminal's shell started by sizedShell. Its output is
// passed on without the wrapper's marker. Until the marker has passed, a
// resize is held (the wrapper's stty would undo it) and input waits; then the
// latest held size is applied, and only then the input is written, so what
// is typed after a resize sees the new size. Close also ends every process
// the shell started.
type terminalSession struct {
	Session
	ctx  context.Context // for the held resize; not cancelled
	once sync.Once
	end  func()

	ready     chan struct{} // closed once the marker has passed (or the stream has ended)
	readyOnce sync.Once

	// Only the reading goroutine touches these.
	scan    readyScanner
	out     []byte // read and scanned, not handed out yet
	readErr error

	mu      sync.Mutex // serialises resizes, guards the fields below
	sized   bool
	pending *[2]uint // cols, rows asked for before the size was set
}

// Read passes the shell's output on, without the wrapper's marker.
func (t *terminalSession) Read(p []byte) (int, error) {
	for len(t.out) == 0 {
		if t.readErr != nil {
			return 0, t.readErr
		}
		if t.scan.found {
			return t.Session.Read(p)
		}
		t.scanNext(make([]byte, max(len(p), len(readyMarker))))
	}
	n := copy(p, t.out)
	t.out = t.out[n:]
	return n, nil
}

// scanNext reads the stream once into buf, before the marker has passed:
// what may be passed on joins t.out, the marker found applies the held size,
// and the end of the stream is kept for Read to report.
func (t *terminalSession) scanNext(buf []byte) {
	n, err := t.Session.Read(buf)
	out, found := t.scan.feed(buf[:n])
	t.out = append(t.out, out...)
	if found {
		t.sizeSet()
	}
	if err != nil {
		t.out, t.readErr = append(t.out, t.scan.flush()...), err
		t.markReady()
	}
}

// awaitSized reads the shell's output until the wrapper has set the size,
// keeping what it read for the first Read; ctx ending closes the stream. The
// warm pool uses it so that a shell it started has finished starting (the
// engine holds the container while an exec starts) before it is handed out.
func (t *terminalSession) awaitSized(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { t.Session.Close() })
	defer stop()
	buf := make([]byte, 4096)
	for !t.scan.found {
		if t.readErr != nil {
			return t.readErr
		}
		t.scanNext(buf)
	}
	return nil
}

// Write types p into the shell once the wrapper has set the size.
func (t *terminalSession) Write(p []byte) (int, error) {
	<-t.ready
	return t.Session.Write(p)
}

func (t *terminalSession) markReady() { t.readyOnce.Do(func() { close(t.ready) }) }

// Resize sets the terminal's size, or keeps it until the wrapper has set the
// initial one.
func (t *terminalSession) Resize(ctx context.Context, cols, rows uint) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.sized {
		t.pending = &[2]uint{cols, rows}
		return nil
	}
	return t.Session.Resize(ctx, cols, rows)
}

// sizeSet records that the wrapper has set the initial size, and applies the
// size asked for meanwhile.
func (t *terminalSession) sizeSet() {
	defer t.markReady()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sized = true
	if t.pending == nil {
		return
	}
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	t.Session.Resize(ctx, t.pending[0], t.pending[1]) // a failure leaves the initial size
	t.pending = nil
}

// Close closes the stream, then kills the shell and what it started.
func (t *terminalSession) Close() error {
	err := t.Session.Close()
	t.markReady() // a Write waiting for the marker fails on the closed stream
	t.once.Do(t.end)
	return err
}

// readyScanner finds readyMarker in a stream and takes it out.
type readyScanner struct {
	held  []byte // may be the start of the marker: not passed on yet
	found bool
}

// feed takes the next bytes of the stream and returns what may be passed on
// now, and whether the marker has just been found.
func (s *readyScanner) feed(b []byte) (out []byte, found bool) {
	if s.found {
		return b, false
	}
	held := append(s.held, b...)
	if i := bytes.Index(held, readyMarker); i >= 0 {
		s.held, s.found = nil, true
		return append(held[:i:i], held[i+len(readyMarker):]...), true
	}
	keep := markerPrefixAtEnd(held)
	s.held = bytes.Clone(held[len(held)-keep:])
	return held[:len(held)-keep], false
}

// flush returns what is held back, at the end of the stream.
func (s *readyScanner) flush() []byte {
	out := s.held
	s.held = nil
	return out
}

// markerPrefixAtEnd is the length of the longest end of b that begins readyMarker.
func markerPrefixAtEnd(b []byte) int {
	for n := min(len(b), len(readyMarker)-1); n > 0; n-- {
		if bytes.HasPrefix(readyMarker, b[len(b)-n:]) {
			return n
		}
	}
	return 0
}
