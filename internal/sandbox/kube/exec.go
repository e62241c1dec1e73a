package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"tuxlab/internal/sandbox"
)

// busybox is the trusted busybox in every pod with the tools volume.
const busybox = sandbox.ToolsDir + "/bin/busybox"

// inDir is the script that runs the command in its directory ($0, "" for
// the container's), so that a missing program ends with the shell's 127.
const inDir = `[ -z "$0" ] || cd -- "$0" || exit 126; exec "$@"`

// command wraps s.Cmd for the exec API, which has no user, environment or
// working directory: the trusted busybox switches user (start-stop-daemon), sets the
// environment (env) and the directory (sh). A pod without the tools volume
// runs the command with the image's /bin/sh and env, as root only.
func command(s sandbox.ExecSpec, tools bool) ([]string, error) {
	root := s.User == "" || s.User == "0" || s.User == "root" || s.User == "0:0"
	if !tools {
		if !root {
			return nil, fmt.Errorf("exec as user %q needs the tools volume on Kubernetes", s.User)
		}
		cmd := []string{"/bin/sh", "-c", inDir, s.Dir}
		if len(s.Env) > 0 {
			cmd = append(append(append(cmd, "env"), s.Env...), "--")
		}
		return append(cmd, s.Cmd...), nil
	}
	var cmd []string
	if !root {
		// start-stop-daemon of BusyBox is its one applet that changes user
		// (initgroups, setgid, setuid), by name or by a uid of the
		// sandbox's /etc/passwd; -n names a process that never runs, so it
		// finds nothing "already running".
		cmd = []string{busybox, "start-stop-daemon", "-S", "-c", s.User, "-n", "tuxlab-no-such", "-a", busybox, "--"}
	} else {
		cmd = []string{busybox}
	}
	cmd = append(cmd, "env")
	cmd = append(cmd, s.Env...)
	cmd = append(cmd, busybox, "sh", "-c", inDir, s.Dir)
	return append(cmd, s.Cmd...), nil
}

// executor prepares an exec of s in pod id's sandbox container: over
// WebSocket, falling back to SPDY for API servers before 1.30.
func (r *Runtime) executor(ctx context.Context, id string, s sandbox.ExecSpec) (remotecommand.Executor, error) {
	cm, err := r.record(ctx, id)
	if err != nil {
		return nil, err
	}
	p, err := r.pod(ctx, id)
	if err != nil {
		return nil, err
	}
	if p == nil || p.Status.Phase != corev1.PodRunning {
		return nil, fmt.Errorf("%w: sandbox %s has no running pod", sandbox.ErrNotRunning, cm.Name)
	}
	cmd, err := command(s, hasTools(p))
	if err != nil {
		return nil, err
	}
	opts := &corev1.PodExecOptions{Container: sandboxContainer, Command: cmd, Stdin: true, Stdout: true, Stderr: !s.TTY, TTY: s.TTY}
	req := r.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(r.ns).Name(id).SubResource("exec").
		VersionedParams(opts, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(r.cfg, "GET", req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(r.cfg, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// exitCode turns a stream's end into the command's code: nil is 0, the API
// server's "command terminated with exit code N" is N.
func (r *Runtime) exitCode(ctx context.Context, id string, err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var code interface{ ExitStatus() int }
	if errors.As(err, &code) {
		return code.ExitStatus(), nil
	}
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	if p, perr := r.pod(context.WithoutCancel(ctx), id); perr == nil && p == nil {
		return -1, fmt.Errorf("%w: %w", sandbox.ErrGone, err)
	}
	return -1, wrap(err)
}

// Run runs s without a TTY to its end (see sandbox.Runtime).
func (r *Runtime) Run(ctx context.Context, id string, s sandbox.ExecSpec, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	s.TTY = false
	ex, err := r.executor(ctx, id, s)
	if err != nil {
		return -1, err
	}
	if stdin == nil {
		stdin = eofReader{}
	}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	return r.exitCode(ctx, id, err)
}

// eofReader is an input that ends at once, for a command without stdin.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// Exec starts s and returns its session (see sandbox.Runtime). The session
// outlives ctx; Close ends its stream.
func (r *Runtime) Exec(ctx context.Context, id string, s sandbox.ExecSpec) (sandbox.Session, error) {
	ex, err := r.executor(ctx, id, s)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss := &session{r: r, id: id, in: inW, out: outR, cancel: cancel, done: make(chan struct{}),
		sizes: make(chan remotecommand.TerminalSize, 1), resized: make(chan remotecommand.TerminalSize)}
	opts := remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Tty: s.TTY}
	if s.TTY {
		opts.TerminalSizeQueue = ss
		if s.Cols > 0 && s.Rows > 0 {
			ss.sizes <- remotecommand.TerminalSize{Width: uint16(s.Cols), Height: uint16(s.Rows)}
		}
	} else {
		opts.Stderr = outW
	}
	go func() {
		err := ex.StreamWithContext(sctx, opts)
		ss.code, ss.err = r.exitCode(sctx, id, err)
		outW.Close()
		inR.Close()
		close(ss.done)
	}()
	return ss, nil
}

// session is a running exec of the exec API.
type session struct {
	r     *Runtime
	id    string
	in    *io.PipeWriter
	out   *io.PipeReader
	sizes chan remotecommand.TerminalSize // the size the exec opens with
	// resized hands Resize's sizes to the stream, unbuffered: Resize returns
	// once the stream has taken the size, so what is typed next meets the
	// new size as it does on Docker, whose resize is a call.
	resized chan remotecommand.TerminalSize
	cancel  context.CancelFunc
	done    chan struct{}
	code    int
	err     error
	once    sync.Once
}

func (s *session) Read(p []byte) (int, error)  { return s.out.Read(p) }
func (s *session) Write(p []byte) (int, error) { return s.in.Write(p) }

// Close ends the stream; the command may go on (sandbox.Session).
func (s *session) Close() error {
	s.once.Do(func() {
		s.in.Close()
		s.out.Close()
		s.cancel()
	})
	return nil
}

// Next gives remotecommand the sizes Resize asks for; nil ends the queue.
func (s *session) Next() *remotecommand.TerminalSize {
	// The opening size first (it is queued before the stream starts, so it
	// is there now or never): a select between ready channels picks at
	// random, and a Resize taken before it would be undone by it.
	select {
	case size := <-s.sizes:
		return &size
	default:
	}
	select {
	case size := <-s.resized:
		return &size
	case <-s.done:
		return nil
	}
}

// Resize hands a terminal size to the stream and returns once it took it.
func (s *session) Resize(ctx context.Context, cols, rows uint) error {
	select {
	case <-s.done:
		return fmt.Errorf("%w: the exec has ended", sandbox.ErrGone)
	default:
	}
	select {
	case s.resized <- remotecommand.TerminalSize{Width: uint16(cols), Height: uint16(rows)}:
		return nil
	case <-s.done:
		return fmt.Errorf("%w: the exec has ended", sandbox.ErrGone)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wait returns the command's exit code once its stream has ended.
func (s *session) Wait(ctx context.Context) (int, error) {
	select {
	case <-s.done:
		return s.code, s.err
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}
