package qemu

import (
	"context"
	"fmt"
	"io"
	"sync"

	"golang.org/x/crypto/ssh"

	"tuxlab/internal/sandbox"
)

// Exec starts s.Cmd in a running machine over its host channel. A machine
// still booting is waited for, until ctx ends.
func (r *Runtime) Exec(ctx context.Context, id string, s sandbox.ExecSpec) (sandbox.Session, error) {
	rec, err := r.running(id)
	if err != nil {
		return nil, err
	}
	cmd := command(s, firstNonEmpty(s.User, rec.User))
	ss, err := r.newSession(ctx, id)
	if err != nil {
		return nil, err
	}
	sess := &session{s: ss, done: make(chan struct{})}
	if sess.stdin, err = ss.StdinPipe(); err != nil {
		ss.Close()
		return nil, err
	}
	stdout, err := ss.StdoutPipe()
	if err != nil {
		ss.Close()
		return nil, err
	}
	stderr, err := ss.StderrPipe()
	if err != nil {
		ss.Close()
		return nil, err
	}
	if s.TTY {
		cols, rows := s.Cols, s.Rows
		if cols == 0 || rows == 0 {
			cols, rows = 80, 24
		}
		modes := ssh.TerminalModes{ssh.ECHO: 1, ssh.TTY_OP_ISPEED: 38400, ssh.TTY_OP_OSPEED: 38400}
		if _, err := withTimeout(ctx, sessionTimeout, func() (struct{}, error) {
			return struct{}{}, ss.RequestPty(termOf(s.Env), int(rows), int(cols), modes)
		}); err != nil {
			ss.Close()
			return nil, fmt.Errorf("machine %s: terminal: %w", id, err)
		}
	}
	if _, err := withTimeout(ctx, sessionTimeout, func() (struct{}, error) {
		if cmd == "" {
			return struct{}{}, ss.Shell()
		}
		return struct{}{}, ss.Start(cmd)
	}); err != nil {
		ss.Close()
		return nil, fmt.Errorf("machine %s: start %q: %w", id, s.Cmd, err)
	}
	sess.out = merge(stdout, stderr)
	go func() {
		sess.code, sess.err = exitCode(ss.Wait())
		close(sess.done)
	}()
	return sess, nil
}

// session is an exec over an SSH session.
type session struct {
	s         *ssh.Session
	stdin     io.WriteCloser
	out       io.Reader
	closeOnce sync.Once
	done      chan struct{}
	code      int
	err       error
}

func (s *session) Read(p []byte) (int, error)  { return s.out.Read(p) }
func (s *session) Write(p []byte) (int, error) { return s.stdin.Write(p) }

// Close ends the session's channel: the guest's sshd hangs up its terminal
// (SIGHUP) or closes its pipes.
func (s *session) Close() error {
	s.closeOnce.Do(func() { s.s.Close() })
	return nil
}

// Resize sends the terminal's new size (SSH's window-change).
func (s *session) Resize(ctx context.Context, cols, rows uint) error {
	select {
	case <-s.done:
		return fmt.Errorf("%w: the session has ended", sandbox.ErrGone)
	default:
	}
	if _, err := withTimeout(ctx, sessionTimeout, func() (struct{}, error) {
		return struct{}{}, s.s.WindowChange(int(rows), int(cols))
	}); err != nil {
		return fmt.Errorf("%w: resize: %w", sandbox.ErrGone, err)
	}
	return nil
}

// Wait returns the command's exit code once it has ended.
func (s *session) Wait(ctx context.Context) (int, error) {
	select {
	case <-s.done:
		return s.code, s.err
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// merge reads a and b to their ends into one stream, as they come.
func merge(a, b io.Reader) io.Reader {
	pr, pw := io.Pipe()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range []io.Reader{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := r.Read(buf)
				if n > 0 {
					mu.Lock()
					_, werr := pw.Write(buf[:n])
					mu.Unlock()
					if werr != nil {
						io.Copy(io.Discard, r) // the reader is gone: keep the channel flowing
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		pw.Close()
	}()
	return pr
}

// Run runs a command without a TTY to its end over the host channel.
func (r *Runtime) Run(ctx context.Context, id string, s sandbox.ExecSpec, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	rec, err := r.running(id)
	if err != nil {
		return -1, err
	}
	s.TTY = false
	cmd := command(s, firstNonEmpty(s.User, rec.User))
	if cmd == "" {
		return -1, fmt.Errorf("machine %s: run: no command", id)
	}
	ss, err := r.newSession(ctx, id)
	if err != nil {
		return -1, err
	}
	defer ss.Close()
	// Past ctx the caller's writers are not written to any more.
	out, errOut := &guarded{w: stdout}, &guarded{w: stderr}
	defer out.stop()
	defer errOut.stop()
	ss.Stdin, ss.Stdout, ss.Stderr = stdin, out, errOut
	if _, err := withTimeout(ctx, sessionTimeout, func() (struct{}, error) { return struct{}{}, ss.Start(cmd) }); err != nil {
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		return -1, fmt.Errorf("machine %s: start %q: %w", id, s.Cmd, err)
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err := <-done:
		return exitCode(err)
	case <-ctx.Done():
		ss.Signal(ssh.SIGKILL)
		return -1, ctx.Err()
	}
}

// guarded is a writer that drops what comes after stop.
type guarded struct {
	mu      sync.Mutex
	w       io.Writer
	stopped bool
}

func (g *guarded) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped || g.w == nil {
		return len(p), nil
	}
	return g.w.Write(p)
}

func (g *guarded) stop() {
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
