package qemu

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"tuxlab/internal/sandbox"
)

// The host channel: every machine runs `sshd -i` on its virtio-serial port
// tuxlab.ssh, which QEMU joins to the unix socket ssh.sock in the machine's
// directory. The driver keeps one SSH connection per machine and user over
// it, and opens a session (an SSH channel) per exec. No guest network is
// involved. The guest accepts one key: the install's, generated on first use
// in StateDir and passed on the kernel command line (a public key).

const keyFile = "id_ed25519"

// Timeouts of the channel's steps once the guest answers.
const (
	sessionTimeout = 20 * time.Second // opening a session and starting its command
	syncTimeout    = 10 * time.Second // `sync` before a stop
)

// loadKey returns the install's key, made on first use.
func loadKey(dir string) (ssh.Signer, error) {
	path := filepath.Join(dir, keyFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		_, priv, gerr := ed25519.GenerateKey(rand.Reader)
		if gerr != nil {
			return nil, gerr
		}
		block, merr := ssh.MarshalPrivateKey(priv, "tuxlab machines")
		if merr != nil {
			return nil, merr
		}
		b = pem.EncodeToMemory(block)
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return nil, fmt.Errorf("write the machines' key: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return nil, fmt.Errorf("write the machines' key: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("read the machines' key: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return signer, nil
}

// publicKeyArg is the key as the guest's kernel command line carries it: the
// base64 of its wire form, which the guest prefixes with ssh-ed25519.
func publicKeyArg(s ssh.Signer) string {
	f := strings.Fields(string(ssh.MarshalAuthorizedKey(s.PublicKey())))
	return f[1]
}

// channels holds the open connections, one per machine: QEMU's socket
// takes one client at a time, so every session of a machine shares it.
type channels struct {
	mu      sync.Mutex
	clients map[string]*ssh.Client
	dialing sync.Map // machine id → *sync.Mutex: one dial at a time
}

// closeMachine closes machine id's connection.
func (c *channels) closeMachine(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.clients[id]; cl != nil {
		cl.Close()
		delete(c.clients, id)
	}
}

// existing returns machine id's open connection, if any.
func (c *channels) existing(id string) *ssh.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clients[id]
}

// drop forgets cl (broken) and closes it.
func (c *channels) drop(id string, cl *ssh.Client) {
	c.mu.Lock()
	if c.clients[id] == cl {
		delete(c.clients, id)
	}
	c.mu.Unlock()
	cl.Close()
}

// client returns the connection to machine id (as root), dialling it when
// there is none. Until the guest's sshd answers (a machine still booting) the
// handshake waits: QEMU holds what each side writes until the other side has
// the port open. Each attempt ends at ctx's deadline or after attemptTimeout;
// a failed one is retried (closing the socket ends the guest's sshd, which
// systemd restarts) until ctx ends.
func (r *Runtime) client(ctx context.Context, id string) (*ssh.Client, error) {
	if cl := r.ch.existing(id); cl != nil {
		return cl, nil
	}
	m, _ := r.ch.dialing.LoadOrStore(id, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	if !lockContext(ctx, mu) {
		return nil, ctx.Err()
	}
	defer mu.Unlock()
	if cl := r.ch.existing(id); cl != nil { // dialled meanwhile
		return cl, nil
	}
	var last error
	for ctx.Err() == nil {
		if r.pid(id) == 0 {
			return nil, fmt.Errorf("%w: machine %s", sandbox.ErrNotRunning, id)
		}
		cl, err := r.dial(ctx, id)
		if err == nil {
			r.ch.mu.Lock()
			r.ch.clients[id] = cl
			r.ch.mu.Unlock()
			done := make(chan struct{})
			go func() { // forget it once it breaks (the guest rebooted, sshd ended)
				cl.Wait()
				close(done)
				r.ch.drop(id, cl)
			}()
			go r.keepAlive(id, cl, done)
			return cl, nil
		}
		last = err
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	// For admins and CI logs: where the boot stands.
	tail := strings.ReplaceAll(r.bootLogTail(id, 400), "\r", "")
	if last != nil {
		return nil, fmt.Errorf("%w (machine %s's channel: %v; console's end: %q)", ctx.Err(), id, last, tail)
	}
	return nil, fmt.Errorf("%w (machine %s not answering; console's end: %q)", ctx.Err(), id, tail)
}

// Keepalives: a guest that reboots or powers off under a connection does
// not always end it (QEMU keeps the host's end of the port open across a
// reset), so a connection whose guest no longer answers a keepalive within
// keepAliveTimeout is dropped; its sessions then end, and a terminal says the
// machine is restarting. The timeout is generous: a guest under emulation on
// a busy host answers slowly, and a false alarm ends a learner's shell.
const (
	keepAliveEvery   = 10 * time.Second
	keepAliveTimeout = 45 * time.Second
)

// keepAlive checks connection cl of machine id until done is closed (it
// broke, or was dropped), dropping it when the guest stops answering.
func (r *Runtime) keepAlive(id string, cl *ssh.Client, done <-chan struct{}) {
	tick := time.NewTicker(keepAliveEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		answered := make(chan struct{})
		go func() {
			// Any answer counts: OpenSSH refuses the request, which is one.
			cl.SendRequest("keepalive@openssh.com", true, nil)
			close(answered)
		}()
		select {
		case <-answered:
		case <-done:
			return
		case <-time.After(keepAliveTimeout):
			r.log.Info("machine channel: no answer to a keepalive; dropping the connection (a reboot or poweroff?)", "machine", id)
			r.ch.drop(id, cl)
			return
		}
	}
}

// lockContext locks mu unless ctx ends first.
func lockContext(ctx context.Context, mu *sync.Mutex) bool {
	for !mu.TryLock() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// attemptTimeout bounds one handshake attempt: long enough for a cold boot
// under emulation to reach sshd, short enough to recover from a lost one.
const attemptTimeout = 3 * time.Minute

func (r *Runtime) dial(ctx context.Context, id string) (*ssh.Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", r.path(id, sshSocket))
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(attemptTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	cfg := &ssh.ClientConfig{
		User: "root",
		Auth: []ssh.AuthMethod{ssh.PublicKeys(r.key)},
		// The channel is this machine's own virtio port, reached through a
		// socket only tuxlab can open: the transport itself says who answers.
		// The guest makes new host keys at its first boot.
		HostKeyCallback: ssh.InsecureIgnoreHostKey(),
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, "machine-"+id, cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

// newSession opens a session on machine id, reconnecting once if the
// connection turns out to be broken, within sessionTimeout of the guest
// answering.
func (r *Runtime) newSession(ctx context.Context, id string) (*ssh.Session, error) {
	for attempt := 0; ; attempt++ {
		cl, err := r.client(ctx, id)
		if err != nil {
			return nil, err
		}
		s, err := withTimeout(ctx, sessionTimeout, cl.NewSession)
		if err == nil {
			return s, nil
		}
		r.ch.drop(id, cl)
		if attempt == 1 || ctx.Err() != nil {
			return nil, fmt.Errorf("machine %s: open a session: %w", id, err)
		}
	}
}

// withTimeout runs f, giving up after d or when ctx ends (f's result is then
// dropped: the caller closes the connection it was using).
func withTimeout[T any](ctx context.Context, d time.Duration, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	var zero T
	select {
	case res := <-ch:
		return res.v, res.err
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-timer.C:
		return zero, fmt.Errorf("no answer within %s", d)
	}
}

// namePattern is a user name runuser takes.
var namePattern = regexp.MustCompile(`^[a-z_][a-z0-9_-]*$`)

// command returns the shell command that runs s as user (a name, a uid, or
// user:group as Docker takes them) from root's connection: runuser for a
// name (a login shell for a terminal without a command), setpriv for ids.
// "" is root's login shell.
func command(s sandbox.ExecSpec, user string) string {
	if user == "" {
		user = "root"
	}
	root := user == "root" || user == "0" || user == "0:0"
	var sw string
	switch {
	case root:
	case namePattern.MatchString(user) && len(s.Cmd) == 0 && s.TTY && len(s.Env) == 0 && s.Dir == "":
		return "exec runuser -l " + quote(user)
	case namePattern.MatchString(user):
		sw = "runuser -u " + quote(user) + " -- "
	default:
		uid, gid, ok := strings.Cut(user, ":")
		if !ok {
			gid = uid
		}
		sw = "setpriv --reuid=" + quote(uid) + " --regid=" + quote(gid) + " --clear-groups "
	}
	if len(s.Cmd) == 0 && sw == "" && len(s.Env) == 0 && s.Dir == "" {
		return ""
	}
	var b strings.Builder
	if s.Dir != "" {
		fmt.Fprintf(&b, "cd %s && ", quote(s.Dir))
	}
	cmdv := s.Cmd
	if len(cmdv) == 0 {
		cmdv = []string{"/bin/bash", "-l"}
	}
	b.WriteString("exec " + sw + "env --") // then NAME=VALUE words, then the command
	for _, e := range s.Env {
		b.WriteString(" " + quote(e))
	}
	for _, a := range cmdv {
		b.WriteString(" " + quote(a))
	}
	return b.String()
}

// quote makes s one word for a POSIX shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// termOf is the terminal type of env (TERM=...), xterm-256color by default.
func termOf(env []string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "TERM="); ok && v != "" {
			return v
		}
	}
	return "xterm-256color"
}

// exitCode maps the end of an SSH session to a command's exit code: a signal
// is 128 + its number, as a shell reports it.
func exitCode(err error) (int, error) {
	var exit *ssh.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		if sig := exit.Signal(); sig != "" {
			return 128 + signalNumber(sig), nil
		}
		return exit.ExitStatus(), nil
	}
	var missing *ssh.ExitMissingError
	if errors.As(err, &missing) || errors.Is(err, io.EOF) {
		return -1, fmt.Errorf("%w: the machine's session ended without an exit status (stopped or rebooted)", sandbox.ErrGone)
	}
	return -1, err
}

func signalNumber(sig string) int {
	n := map[string]int{"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "ABRT": 6, "FPE": 8, "KILL": 9,
		"SEGV": 11, "PIPE": 13, "ALRM": 14, "TERM": 15, "USR1": 10, "USR2": 12}[sig]
	if n == 0 {
		n = 1
	}
	return n
}
