//go:build linux

// Package ttyrelay is the first process of every sandbox terminal. It runs
// inside the sandbox, from the read-only tools mount, on the terminal the
// engine gives an exec, and gives the shell a terminal of its own (an inner
// pseudo-terminal) that it relays both ways.
//
// The inner terminal is what lets a sandbox behave as a Linux machine when a
// learner closes the terminal: the engine never hangs up an exec's terminal
// (Docker 20.10 keeps the shell running with nobody attached), but the relay
// can. When tuxlab ends the terminal it sends the hang-up request in-band, on
// the terminal's input; the relay then closes the inner terminal's master,
// and the kernel does what it does when a modem drops or an SSH connection
// ends: SIGHUP and SIGCONT to the session's leader, the shell, which passes
// SIGHUP on to its jobs and exits. Jobs started with nohup, setsid or
// disowned survive, exactly as the process lessons teach.
//
// Two things a real terminal does not do, because a sandbox needs them:
//   - a shell still alive some seconds after the hang-up (one that traps or
//     ignores SIGHUP) is killed, so shells never outlive their connection;
//   - if the processes left in the terminal's session after the hang-up
//     hold half the sandbox's pid limit or more (a fork bomb), now or within
//     a second, they are all stopped and killed. The relay was started before the bomb, so it needs no new
//     process to do it, where anything run through the engine would.
package ttyrelay

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ReadyMarker is printed on the outer terminal once the inner one has its
// size and the shell has started: tuxlab holds input and resizes until it
// has seen it. It is an OSC sequence, which terminals ignore should one
// ever get through.
var ReadyMarker = []byte("\x1b]tuxlab;sized\x07")

// HangupRequest is the in-band request to hang up, followed by the session's
// token (HangupEnv) and BEL. It arrives on the relay's input in one write.
const HangupRequest = "\x1b]tuxlab;hangup;"

// Environment variables the relay reads and keeps from the shell.
const (
	HangupEnv = "TUXLAB_HANGUP" // the token that makes an in-band hang-up request genuine
	MarkEnv   = "TUXLAB_RUN"    // tuxlab's mark on the relay, found by the fallback reaper
)

// Config is one relay run.
type Config struct {
	Cols, Rows uint16
	Argv       []string // the shell and its arguments
	Env        []string // the shell's environment
	Token      string   // "" accepts no in-band hang-up
	// Grace is how long the shell has to exit after a hang-up before it is
	// killed (default 5s: bash passing SIGHUP on to its jobs may take
	// seconds on a loaded host).
	Grace time.Duration
	// PidsMaxFiles are where the sandbox's pid limit is read, the first
	// that can be (default: cgroup v2's, then v1's).
	PidsMaxFiles []string
	Log          io.Writer // diagnostics (default: nowhere)
}

// Exit codes of Run when the shell did not end by itself.
const (
	ExitHangup = 128 + int(syscall.SIGHUP)
	ExitFailed = 125
)

// Run relays between in/out (the outer terminal) and a new inner terminal
// running cfg.Argv, until the shell ends or the terminal is hung up, and
// returns the exit code to end with. in must be a terminal: it is put into
// raw mode, so every byte reaches the inner terminal's line discipline as
// typed.
func Run(cfg Config, in, out *os.File) int {
	r := &relay{cfg: cfg, in: in, out: out, hangup: make(chan string, 1), shellDone: make(chan struct{})}
	if r.cfg.Grace <= 0 {
		r.cfg.Grace = 5 * time.Second
	}
	if r.cfg.Log == nil {
		r.cfg.Log = io.Discard
	}
	if len(r.cfg.PidsMaxFiles) == 0 {
		r.cfg.PidsMaxFiles = []string{"/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"}
	}
	code, err := r.run()
	if err != nil {
		fmt.Fprintf(r.cfg.Log, "tuxlab-tty: %v\n", err)
	}
	return code
}

type relay struct {
	cfg     Config
	in, out *os.File
	master  *os.File
	shell   *exec.Cmd

	hangup    chan string   // why, once
	shellDone chan struct{} // closed when the shell has been waited for
	exitCode  int
	closeOnce sync.Once
}

func (r *relay) run() (int, error) {
	// Signals first: a hang-up of the outer terminal, or tuxlab's fallback
	// reaper (SIGTERM), must never kill the relay before it has hung up
	// the shell's terminal.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGWINCH, syscall.SIGINT, syscall.SIGQUIT)
	sigchld := make(chan os.Signal, 1)
	signal.Notify(sigchld, syscall.SIGCHLD)
	defer signal.Stop(sigs)

	setSize(int(r.in.Fd()), r.cfg.Cols, r.cfg.Rows) // engines before API 1.42 ignore an exec's size
	if _, err := makeRaw(int(r.in.Fd())); err != nil {
		return ExitFailed, fmt.Errorf("raw mode: %w", err)
	}
	master, slave, err := openPTY(r.cfg.Cols, r.cfg.Rows)
	if err != nil {
		return ExitFailed, err
	}
	r.master = master
	r.shell = exec.Command(r.cfg.Argv[0], r.cfg.Argv[1:]...)
	r.shell.Env = r.cfg.Env
	r.shell.Stdin, r.shell.Stdout, r.shell.Stderr = slave, slave, slave
	r.shell.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := r.shell.Start(); err != nil {
		slave.Close()
		master.Close()
		return ExitFailed, fmt.Errorf("start %s: %w", r.cfg.Argv[0], err)
	}
	slave.Close() // the shell has it; the master reads EIO once nobody does
	go r.waitShell(sigchld)

	if _, err := r.out.Write(ReadyMarker); err != nil {
		r.requestHangup("output closed")
	}
	outputDone := make(chan struct{})
	go func() { r.pumpOutput(); close(outputDone) }()
	go r.pumpInput()

	for {
		select {
		case s := <-sigs:
			switch s {
			case syscall.SIGWINCH:
				r.copySize()
			case syscall.SIGHUP, syscall.SIGTERM:
				r.requestHangup(s.String())
			}
		case why := <-r.hangup:
			fmt.Fprintf(r.cfg.Log, "tuxlab-tty: hang-up (%s)\n", why)
			r.hangUp()
			return ExitHangup, nil
		case <-r.shellDone:
			// The shell ended by itself (exit, logout): pass on what it
			// printed last, then close the terminal as an emulator does.
			select {
			case <-outputDone:
			case <-time.After(200 * time.Millisecond):
			}
			r.closeMaster()
			return r.exitCode, nil
		}
	}
}

func (r *relay) requestHangup(why string) {
	select {
	case r.hangup <- why:
	default:
	}
}

func (r *relay) closeMaster() { r.closeOnce.Do(func() { r.master.Close() }) }

// waitShell reaps the shell and keeps its exit code. It waits for SIGCHLD
// and then reaps without blocking: a thread blocked in wait(2) would be one
// more task counted against the sandbox's pid limit.
func (r *relay) waitShell(sigchld <-chan os.Signal) {
	pid := r.shell.Process.Pid
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		switch {
		case err != nil && err != unix.EINTR:
			r.exitCode = ExitFailed
		case got != pid:
			<-sigchld
			continue
		case ws.Signaled():
			r.exitCode = 128 + int(ws.Signal())
		default:
			r.exitCode = ws.ExitStatus()
		}
		close(r.shellDone)
		return
	}
}

// hangUp hangs the inner terminal up and makes sure the shell ends.
func (r *relay) hangUp() {
	r.closeMaster() // the kernel sends SIGHUP and SIGCONT to the shell
	select {
	case <-r.shellDone:
	case <-time.After(r.cfg.Grace):
		fmt.Fprintf(r.cfg.Log, "tuxlab-tty: the shell outlived its hang-up by %s: killed\n", r.cfg.Grace)
		unix.Kill(r.shell.Process.Pid, unix.SIGKILL) // not yet reaped: the pid is still the shell's
		<-r.shellDone
	}
	r.watchSession()
}

// bombWatch is how long the relay watches what is left of the session after
// the shell has ended: a fork bomb caught small fills the pid limit within
// it. A session left empty, the usual case, is not watched.
const bombWatch = time.Second

// watchSession ends what is left of the terminal's session if it holds half
// the sandbox's pid limit or more, now or within bombWatch.
func (r *relay) watchSession() {
	sid := r.shell.Process.Pid
	for end := time.Now().Add(bombWatch); ; time.Sleep(50 * time.Millisecond) {
		members := sessionMembers(sid)
		if len(members) == 0 {
			return
		}
		if r.isBomb(len(members)) {
			n := endSession(sid)
			fmt.Fprintf(r.cfg.Log, "tuxlab-tty: %d processes were left in the terminal's session, half the sandbox's pid limit or more: %d killed\n", len(members), n)
			return
		}
		if time.Now().After(end) {
			return
		}
	}
}

// isBomb reports whether n processes left in a hung-up terminal's session
// hold half the sandbox's process slots or more: what a fork bomb leaves,
// where a learner's background work is a few processes.
func (r *relay) isBomb(n int) bool {
	for _, f := range r.cfg.PidsMaxFiles {
		if max, err := readInt(f); err == nil && max > 0 {
			return int64(n) >= max/2
		}
	}
	return n >= 512 // no pid limit to be seen
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// endSession stops every process of session sid until a sweep finds no new
// one (a stopped process cannot fork), then kills them all. It reads /proc
// and sends signals: it starts no process.
func endSession(sid int) int {
	stopped := map[int]bool{}
	for round := 0; round < 100; round++ {
		found := false
		for _, pid := range sessionMembers(sid) {
			if !stopped[pid] {
				unix.Kill(pid, unix.SIGSTOP)
				stopped[pid], found = true, true
			}
		}
		if !found {
			break
		}
	}
	for pid := range stopped {
		unix.Kill(pid, unix.SIGKILL)
	}
	return len(stopped)
}

// sessionMembers lists the processes of session sid, from /proc/PID/stat.
func sessionMembers(sid int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if s, ok := sessionOf(pid); ok && s == sid {
			out = append(out, pid)
		}
	}
	return out
}

// sessionOf reads a process's session id: the sixth field of /proc/PID/stat,
// counted after the command name, which may itself hold spaces and ")".
func sessionOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 {
		return 0, false
	}
	sid, err := strconv.Atoi(f[3])
	return sid, err == nil
}

// pumpOutput copies the inner terminal's output to the outer one.
func (r *relay) pumpOutput() {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.master.Read(buf)
		if n > 0 {
			if _, werr := r.out.Write(buf[:n]); werr != nil {
				r.requestHangup("output closed")
				return
			}
		}
		if err != nil {
			return // EIO: no process has the terminal open any more
		}
	}
}

// pumpInput copies what is typed to the inner terminal, watching for the
// in-band hang-up request.
func (r *relay) pumpInput() {
	var want []byte
	if r.cfg.Token != "" {
		want = []byte(HangupRequest + r.cfg.Token + "\a")
	}
	var held []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := r.in.Read(buf)
		if n > 0 {
			data := append(held, buf[:n]...)
			held = nil
			if want != nil {
				if i := bytes.Index(data, want); i >= 0 {
					r.master.Write(data[:i])
					r.requestHangup("requested")
					return
				}
				// Hold back an unfinished request; keys never send "ESC ] t".
				if k := requestPrefixAtEnd(data, want); k >= 3 {
					held = bytes.Clone(data[len(data)-k:])
					data = data[:len(data)-k]
				}
			}
			if len(data) > 0 {
				// tuxlab sends what was typed after a resize only once the
				// engine has resized the outer terminal: giving the inner one
				// that size first keeps the order a local terminal has.
				r.copySize()
				if _, werr := r.master.Write(data); werr != nil {
					return
				}
			}
		}
		if err != nil {
			r.requestHangup("input closed")
			return
		}
	}
}

// requestPrefixAtEnd is the length of the longest end of b that begins want.
func requestPrefixAtEnd(b, want []byte) int {
	for n := min(len(b), len(want)-1); n > 0; n-- {
		if bytes.HasPrefix(want, b[len(b)-n:]) {
			return n
		}
	}
	return 0
}

// copySize gives the inner terminal the outer one's size; the kernel then
// signals SIGWINCH to the inner terminal's foreground if the size changed.
// It goes through SyscallConn because File.Fd would switch the files to
// blocking mode.
func (r *relay) copySize() {
	var ws *unix.Winsize
	var err error
	if c, cerr := r.in.SyscallConn(); cerr == nil {
		c.Control(func(fd uintptr) { ws, err = unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ) })
	}
	if ws == nil || err != nil {
		return
	}
	if c, cerr := r.master.SyscallConn(); cerr == nil {
		c.Control(func(fd uintptr) { unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws) })
	}
}

func setSize(fd int, cols, rows uint16) error {
	return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows})
}

// makeRaw puts terminal fd into raw mode, as cfmakeraw(3) does.
func makeRaw(fd int) (*unix.Termios, error) {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	old := *t
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	return &old, unix.IoctlSetTermios(fd, unix.TCSETS, t)
}

// openPTY opens a new pseudo-terminal of cols × rows and returns its master
// and its slave. The slave is opened from the master (TIOCGPTPEER), never by
// a path under /dev/pts, which root in the sandbox could change.
func openPTY(cols, rows uint16) (master, slave *os.File, err error) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(mfd)
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	sfd, err := ptyPeer(mfd, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if err != nil {
		unix.Close(mfd)
		return nil, nil, fmt.Errorf("open pty peer: %w", err)
	}
	// A fresh login terminal: the kernel's defaults, plus UTF-8 input.
	if t, err := unix.IoctlGetTermios(sfd, unix.TCGETS); err == nil {
		t.Iflag |= unix.IUTF8
		unix.IoctlSetTermios(sfd, unix.TCSETS, t)
	}
	setSize(sfd, cols, rows)
	if err := unix.SetNonblock(mfd, true); err != nil {
		unix.Close(mfd)
		unix.Close(sfd)
		return nil, nil, err
	}
	return os.NewFile(uintptr(mfd), "ptmx"), os.NewFile(uintptr(sfd), "pts"), nil
}

// ptyPeer opens the slave of master mfd with flags (ioctl TIOCGPTPEER).
func ptyPeer(mfd, flags int) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(mfd), uintptr(unix.TIOCGPTPEER), uintptr(flags))
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
