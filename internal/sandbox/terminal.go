package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"tuxlab/internal/errs"
	"tuxlab/internal/ttyrelay"
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
	rt, err := s.rtFor(c.Kind)
	if err != nil {
		return nil, nil, err
	}
	// A sandbox from the warm pool comes with its first shell started.
	ts := s.pool.takeShell(c.EngineID)
	if ts != nil {
		ts.Resize(ctx, cols, rows) // held until its wrapper has set the initial size
	} else if err := s.waitReady(ctx, rt, c); err != nil {
		return nil, nil, err
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

// openShell starts t's shell with a TTY of cols × rows in container c, under
// the terminal relay (ttyrelay) so that closing it hangs it up.
func (s *Service) openShell(ctx context.Context, rt Runtime, t *Template, c *Container, cols, rows uint) (*terminalSession, error) {
	m, token := newMark(), newMark()
	sess, err := rt.Exec(ctx, c.EngineID, ExecSpec{Cmd: sizedShell(t.Shell, cols, rows), User: t.User, TTY: true, Cols: cols, Rows: rows,
		// A login program would set USER and LOGNAME; the engine sets only
		// HOME. The relay keeps the mark, the token and GOMAXPROCS (fewer
		// threads: each counts against the pid limit) from the shell.
		Env: []string{"TERM=xterm-256color", "USER=" + t.User, "LOGNAME=" + t.User, m.env(), ttyrelay.HangupEnv + "=" + string(token),
			"GOMAXPROCS=1"}})
	if err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	ts := &terminalSession{Session: sess, ctx: ctx, token: string(token), ready: make(chan struct{}),
		fallback: func() { s.hangupByMark(ctx, rt, t, c, m) }}
	if c.Kind == KindMachine {
		ts.lost = func(ctx context.Context, err error) error { return s.machineLost(ctx, rt, c, err) }
	}
	return ts, nil
}

// Why a machine's terminal ended without its shell's exit status: its
// channel went with a reboot or a poweroff from inside.
var (
	ErrMachineRestarting = &errs.Error{Kind: errs.Unavailable, RetryAfter: 10 * time.Second,
		Detail: "The machine is restarting: open the terminal again once it is back"}
	ErrMachineStopped = errs.E(errs.Conflict, "The machine powered off: start it again to go on")
)

// machineLost says why machine c's shell ended with err instead of an exit
// status: the machine restarting (QEMU runs on), or powered off (QEMU
// ended), which the sandbox's row then records. Any other err is returned
// as it is.
func (s *Service) machineLost(ctx context.Context, rt Runtime, c *Container, err error) error {
	st, ierr := rt.Inspect(ctx, c.EngineID)
	switch {
	case ierr != nil:
		return err
	case st.Running:
		return fmt.Errorf("%w (%w)", ErrMachineRestarting, err)
	}
	if _, rerr := s.refresh(ctx, rt, c); rerr != nil {
		s.opt.Log.Warn("recording a machine that powered off", "container_id", c.ID, "error", rerr.Error())
	}
	return fmt.Errorf("%w (%w)", ErrMachineStopped, err)
}

// RelayPath is where sandboxes find the terminal relay: on the read-only
// tools mount, out of reach of root in the sandbox.
const RelayPath = toolsBin + "/tuxlab-tty"

// relayOrWrapper starts the relay ($1 columns, $2 rows, then the shell), or,
// in a sandbox made before the tools mount existed, sets the size itself,
// says so with the relay's ready marker, and becomes the shell: that shell
// is then ended by hangupByMark alone.
const relayOrWrapper = `[ -x ` + RelayPath + ` ] && exec ` + RelayPath + ` "$@"
stty cols "$1" rows "$2" 2>/dev/null; printf '\033]tuxlab;sized\007'; shift 2; exec "$@"`

// readyMarker is what the relay prints once the shell runs on a terminal of
// the size asked for.
var readyMarker = ttyrelay.ReadyMarker

// sizedShell is the command that starts shell in a terminal of cols × rows.
// Engines before API 1.42 (Docker 20.10) ignore an exec's initial size, and a
// resize can only follow the start, racing the shell's first output; the
// relay sets the size inside the sandbox before the shell starts, which holds
// on every engine.
func sizedShell(shell []string, cols, rows uint) []string {
	return append([]string{"/bin/sh", "-c", relayOrWrapper, "tuxlab-terminal",
		strconv.FormatUint(uint64(cols), 10), strconv.FormatUint(uint64(rows), 10)}, shell...)
}

// hangupGrace is how long a hung-up relay has to end the shell (it gives
// the shell ttyrelay's default 5 s) before tuxlab turns to hangupByMark.
const hangupGrace = 8 * time.Second

// hangupScript sends SIGHUP to the processes carrying the mark $1 (a
// terminal's relay, which hangs its terminal up on that signal) and, should
// one still be there after a few seconds, kills it: its terminal's master
// closes with it, which the kernel takes as a hang-up too. Only the relay
// carries the mark; what the learner started does not. In a sandbox made
// before the relay, the mark is the shell's, which then ends with SIGKILL.
const hangupScript = `m=$1
marked() { grep -zlx "` + markVar + `=$m" /proc/[0-9]*/environ 2>/dev/null; }
for sig in HUP KILL; do
  found=
  for f in $(marked); do
    p=${f#/proc/}; kill -$sig "${p%/environ}" 2>/dev/null && found=1
  done
  [ -z "$found" ] && break
  [ $sig = HUP ] && sleep 3
done; exit 0`

// hangupByMark hangs up a terminal whose relay did not answer the in-band
// request, through a process started in the sandbox (which a sandbox at its
// pid limit may refuse: the in-band request needs none).
func (s *Service) hangupByMark(ctx context.Context, rt Runtime, t *Template, c *Container, m mark) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	spec := ExecSpec{Cmd: []string{trustedSh, "-c", hangupScript, "hangup", string(m)}, User: t.User, Env: []string{"PATH=" + toolsBin}}
	if code, err := rt.Run(ctx, c.EngineID, spec, nil, io.Discard, io.Discard); err != nil || code != 0 {
		s.opt.Log.Warn("could not hang up a terminal", "container_id", c.ID, "exit", code, "error", fmt.Sprint(err))
	}
}

// terminalSession is a terminal's shell started by sizedShell. Its output is
// passed on without the wrapper's marker. Until the marker has passed, a
// resize is held (the wrapper's stty would undo it) and input waits; then the
// latest held size is applied, and only then the input is written, so what
// is typed after a resize sees the new size. Close also ends every process
// the shell started.
type terminalSession struct {
	Session
	ctx      context.Context // for the held resize and the hang-up; not cancelled
	token    string          // makes the in-band hang-up request genuine
	once     sync.Once
	fallback func() // hangs up through a process in the sandbox

	ready     chan struct{} // closed once the marker has passed (or the stream has ended)
	readyOnce sync.Once

	// lost, for a machine, turns a Wait that ended without an exit status
	// into why (machineLost).
	lost func(ctx context.Context, err error) error

	// Only the reading goroutine touches these.
	scan    readyScanner
	out     []byte // read and scanned, not handed out yet
	readErr error

	mu      sync.Mutex // serialises resizes, guards the fields below
	sized   bool
	pending *[2]uint // cols, rows asked for before the size was set
}

// Wait is the shell's Wait; for a machine whose channel went, the error says
// whether it is restarting or powered off.
func (t *terminalSession) Wait(ctx context.Context) (int, error) {
	code, err := t.Session.Wait(ctx)
	if err != nil && t.lost != nil && ctx.Err() == nil {
		err = t.lost(ctx, err)
	}
	return code, err
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

// Close hangs the terminal up, as a real one when the line drops: the relay
// closes the shell's terminal, the kernel sends the shell SIGHUP and the
// shell passes it on to its jobs; what was started with nohup, setsid or
// disowned goes on running. Close waits until the relay has ended, at most
// a few seconds, then closes the stream.
func (t *terminalSession) Close() error {
	t.once.Do(t.hangUp)
	err := t.Session.Close()
	t.markReady() // a Write waiting for the marker fails on the closed stream
	return err
}

// hangUp asks the relay, in band, to hang up, and waits for it to end. The
// request is written even before the relay has said it is ready: the engine
// holds it until the relay reads its input, so a terminal closed as soon as
// it opened ends too. A relay that does not end (none in a sandbox made
// before the tools mount, or one that never started) is hung up by the
// fallback.
func (t *terminalSession) hangUp() {
	ctx, cancel := context.WithTimeout(t.ctx, hangupGrace)
	defer cancel()
	if _, err := t.Session.Write([]byte(ttyrelay.HangupRequest + t.token + "\a")); err == nil {
		if _, err := t.Session.Wait(ctx); err == nil {
			return
		}
	}
	t.Session.Close()
	t.fallback()
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
