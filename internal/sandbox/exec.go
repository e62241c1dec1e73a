package sandbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/errs"
)

// Script is a program to run in a sandbox without a terminal: a lab's setup,
// a check, a solution. It is a bash or sh script ("#!/bin/bash" or
// "#!/bin/sh"; sh without a "#!" line), run by the trusted bash in ToolsDir
// (in POSIX mode for sh), never by the sandbox's own shell, and fed to it on
// standard input, so its text never shows in `ps` and no file of it is left
// behind.
type Script struct {
	Text    string
	AsRoot  bool          // root, or the template's user (in its home)
	Timeout time.Duration // default DefaultScriptTimeout; at most MaxScriptTimeout
	// OutputCap bounds what is kept of each stream; the rest is read and
	// dropped. Default DefaultOutputCap.
	OutputCap int
	// Nice, from 1 to 19, lowers the script's CPU priority (its nice value)
	// below the learner's own processes; 0 leaves it.
	Nice int
}

// Limits of scripts.
const (
	DefaultScriptTimeout = 10 * time.Second
	MaxScriptTimeout     = 10 * time.Minute
	DefaultOutputCap     = 64 << 10
	MaxScriptBytes       = 64 << 10
)

// Result is how a script ended.
type Result struct {
	ExitCode  int
	Stdout    string
	Stderr    string
	Truncated bool // output beyond the cap was dropped
	TimedOut  bool // killed at its timeout; ExitCode is then -1
	Duration  time.Duration
	// Failures are the first lines of stdout starting "FAIL: ", without the
	// prefix, found in the whole stream, also past the cap.
	Failures []string
	// Tampered is set when a check did not run because the sandbox's system
	// files were tampered with (Service.CheckIn); ExitCode is then -1.
	Tampered *Tampering
	// Skipped is set when the script did not run because its Budget's time
	// was spent; ExitCode is then -1 and TimedOut true.
	Skipped bool
}

// Budget bounds a sequence of scripts as a whole (a lab's check of every
// task). Zero fields bound nothing.
type Budget struct {
	// Time is the wall time of the whole sequence: each script's timeout is
	// at most what is left, and a script with less than a second left does
	// not run (Result.Skipped).
	Time time.Duration
	// Output is what is kept of all the scripts' output: each script's cap
	// is half of what is left (at least MinOutput, at most its own cap).
	Output, MinOutput int
}

// OK reports whether the script ran to its end with exit code 0.
func (r *Result) OK() bool { return r.Tampered.Clean() && !r.TimedOut && r.ExitCode == 0 }

// ErrScriptTooLarge refuses a script over MaxScriptBytes.
var ErrScriptTooLarge = errs.Errorf(errs.Invalid, "A script must be at most %d bytes", MaxScriptBytes)

// Exec runs a script in the actor's running sandbox id. Ownership is checked
// as everywhere (another user's sandbox is ErrContainerNotFound); a stopped
// sandbox is ErrNotRunning. The script is killed at its timeout inside the
// sandbox too, so a check that hangs cannot outlive its request.
func (s *Service) Exec(ctx context.Context, a actor.Actor, id int64, sc Script) (*Result, error) {
	c, err := s.Get(ctx, a, id)
	if err != nil {
		return nil, err
	}
	res, err := s.ExecIn(ctx, c, sc)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// ExecIn is Exec on a container the caller already holds (from Get, Create or
// Start, so ownership is checked), for one script or several in turn (a lab's
// checks): the template is read and the activity recorded once for all.
func (s *Service) ExecIn(ctx context.Context, c *Container, scripts ...Script) ([]*Result, error) {
	return s.execIn(ctx, c, Budget{}, scripts)
}

// execIn is ExecIn within budget b.
func (s *Service) execIn(ctx context.Context, c *Container, b Budget, scripts []Script) ([]*Result, error) {
	if c.Status != StatusRunning {
		return nil, ErrNotRunning
	}
	for _, sc := range scripts {
		if err := validScript(sc); err != nil {
			return nil, err
		}
	}
	t, err := s.store.FindTemplateByID(ctx, c.TemplateID)
	if err != nil {
		return nil, err
	}
	rt, err := s.rtFor(c.Kind)
	if err != nil {
		return nil, err
	}
	if err := s.waitReady(ctx, rt, c); err != nil {
		return nil, err
	}
	results := make([]*Result, len(scripts))
	deadline, outLeft := time.Now().Add(b.Time), b.Output
	for i, sc := range scripts {
		if b.Time > 0 {
			left := time.Until(deadline)
			if left < time.Second {
				results[i] = &Result{ExitCode: -1, TimedOut: true, Skipped: true}
				continue
			}
			sc.Timeout = min(cmp.Or(sc.Timeout, DefaultScriptTimeout), left)
		}
		if b.Output > 0 {
			sc.OutputCap = min(max(outLeft/2, b.MinOutput), cmp.Or(sc.OutputCap, DefaultOutputCap))
		}
		if results[i], err = s.run(ctx, rt, t, c, sc); err != nil {
			return nil, err
		}
		outLeft -= len(results[i].Stdout) + len(results[i].Stderr)
	}
	if _, err := s.Touch(ctx, c.ID); err != nil && !errors.Is(err, ErrContainerNotFound) {
		return nil, err
	}
	return results, nil
}

// validScript refuses a script that could not run: too large, or for
// another interpreter than bash or sh.
func validScript(sc Script) error {
	if len(sc.Text) > MaxScriptBytes {
		return ErrScriptTooLarge
	}
	return CheckInterpreter(sc.Text)
}

// run runs one script in container c of template t.
func (s *Service) run(ctx context.Context, rt Runtime, t *Template, c *Container, sc Script) (*Result, error) {
	if sc.Timeout <= 0 {
		sc.Timeout = DefaultScriptTimeout
	}
	sc.Timeout = min(sc.Timeout, MaxScriptTimeout)
	if sc.OutputCap <= 0 {
		sc.OutputCap = DefaultOutputCap
	}
	// Every process the script starts inherits this mark, so that what a
	// script left running at its timeout can be found and ended.
	mark := newMark()
	spec, err := scriptSpec(t, sc, mark)
	if err != nil {
		return nil, err
	}
	stdout, stderr := &capped{max: sc.OutputCap}, &capped{max: sc.OutputCap}
	fails := &failureLines{max: 3}
	// The trusted timeout kills the script inside the sandbox; the context
	// gives it a moment more to report, and is the last word should the
	// engine not answer.
	rctx, cancel := context.WithTimeout(ctx, sc.Timeout+3*time.Second)
	defer cancel()
	start := time.Now()
	code, err := rt.Run(rctx, c.EngineID, spec, strings.NewReader(sc.Text), io.MultiWriter(stdout, fails), stderr)
	fails.flush()
	res := &Result{ExitCode: code, Stdout: stdout.String(), Stderr: stderr.String(),
		Truncated: stdout.dropped || stderr.dropped, Duration: time.Since(start), Failures: fails.found}
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		res.TimedOut, res.ExitCode = true, -1
	case err != nil:
		return nil, err
	case code == 137 && res.Duration >= sc.Timeout: // SIGKILL from the trusted timeout
		res.TimedOut, res.ExitCode = true, -1
	}
	if res.TimedOut {
		s.reap(context.WithoutCancel(ctx), rt, t, c, mark)
	}
	return res, nil
}

// A mark is put in the environment of a script or a terminal's shell; every
// process started from it inherits the mark, which is how reap finds them all,
// however they were started (in the background, with nohup or setsid). Only
// a process that drops its environment (env -i, sudo's env_reset) escapes.
type mark string

// markVar is the environment variable that carries a mark.
const markVar = "TUXLAB_RUN"

func newMark() mark {
	b := make([]byte, 8)
	rand.Read(b)
	return mark(hex.EncodeToString(b))
}

func (m mark) env() string { return markVar + "=" + string(m) }

// reapScript kills every process carrying the mark $1, and every process in a
// session led by a marked process: a terminal's shell leads its own session,
// so what it started under `sudo` or `env -i` (an environment without the
// mark) ends with it too. A check script's process leads no session, so for
// scripts only the mark counts. It works with one grep and reads of
// /proc/PID/stat by the shell itself, no fork per process, so it still runs in
// a sandbox near its pid limit; a few rounds catch children forked while
// their parent was being killed.
const reapScript = `m=$1
for round in 1 2 3; do
  found= sids=
  for f in $(grep -zlx "` + markVar + `=$m" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}; p=${p%/environ}
    if read -r st < "/proc/$p/stat" 2>/dev/null; then
      set -- ${st##*) }
      [ "$4" = "$p" ] && sids="$sids $p"
    fi
    kill -9 "$p" 2>/dev/null && found=1
  done
  for s in $sids; do
    for f in /proc/[0-9]*/stat; do
      read -r st < "$f" 2>/dev/null || continue
      set -- ${st##*) }
      [ "$4" = "$s" ] || continue
      p=${f#/proc/}; kill -9 "${p%/stat}" 2>/dev/null && found=1
    done
  done
  [ -z "$found" ] && break
done; exit 0`

// reap ends every process carrying mark m in container c of template t: what
// a timed-out script left running, or what a closed terminal started. Without
// CAP_SYS_PTRACE a process's environment is readable only by its own user, so
// it runs as the template's user and as root (for what ran as root). It runs
// the trusted BusyBox sh, whose grep and kill are its own, so nothing the
// learner changed in the sandbox takes part.
func (s *Service) reap(ctx context.Context, rt Runtime, t *Template, c *Container, m mark) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	users := []string{"root"}
	if t.User != "" && t.User != "root" {
		users = []string{t.User, "root"}
	}
	for _, user := range users {
		spec := ExecSpec{Cmd: []string{trustedSh, "-c", reapScript, "reap", string(m)}, User: user, Env: []string{"PATH=" + toolsBin}}
		if code, err := rt.Run(ctx, c.EngineID, spec, nil, io.Discard, io.Discard); err != nil || code != 0 {
			s.opt.Log.Warn("could not end the processes of a script or terminal", "container_id", c.ID, "user", user, "exit", code, "error", fmt.Sprint(err))
		}
	}
}

// The trusted tools scripts run with, by absolute path: static programs on
// the read-only volume at ToolsDir, which root in the sandbox can neither
// change nor unmount (docs/sandboxes.md).
const (
	toolsBin       = ToolsDir + "/bin"
	trustedEnv     = toolsBin + "/env"
	trustedTimeout = toolsBin + "/timeout"
	trustedBash    = toolsBin + "/bash"
	// trustedSh is BusyBox's sh, for tuxlab's own scripts (the reaper, the
	// verification of system files): Debian's static BusyBox runs its own
	// applets before anything in PATH, so they use nothing of the sandbox's.
	// That is also why authors' sh scripts run under bash in POSIX mode
	// instead: their commands must be the sandbox's (dpkg, ps, ip...).
	trustedSh = toolsBin + "/sh"
)

// scriptPath is every script's PATH: the system's directories, without
// /usr/local, where learners put programs of their own that would shadow the
// system's.
const scriptPath = "/usr/sbin:/usr/bin:/sbin:/bin"

// scriptSpec is the exec that runs sc in a sandbox of template t, carrying
// mark m: the trusted env clears the environment the image and the engine
// give (no BASH_ENV, ENV or PATH of theirs) and sets only tuxlab's, then the
// trusted timeout runs the trusted shell on the script fed to its stdin.
func scriptSpec(t *Template, sc Script, m mark) (ExecSpec, error) {
	shell, err := interpreter(sc.Text)
	if err != nil {
		return ExecSpec{}, err
	}
	user, home := t.User, "/home/"+t.User
	if t.User == "root" || t.User == "" {
		user, home = "root", "/root"
	}
	runAs, dir, runHome := user, home, home
	if sc.AsRoot {
		runAs, dir, runHome = "root", "/", "/root"
	}
	secs := strconv.Itoa(int((sc.Timeout + time.Second - 1) / time.Second))
	cmd := []string{trustedEnv, "-i", "PATH=" + scriptPath, "LANG=C.UTF-8",
		"TUXLAB_USER=" + user, "TUXLAB_HOME=" + home, "HOME=" + runHome, "USER=" + runAs, "LOGNAME=" + runAs, m.env(),
		trustedTimeout, "-s", "KILL", secs}
	if sc.Nice > 0 {
		// The trusted BusyBox has renice but no nice(1): its shell lowers its
		// own priority, then becomes the interpreter.
		cmd = append(cmd, trustedSh, "-c", `renice -n "$0" -p $$ >/dev/null 2>&1; exec "$@"`, strconv.Itoa(min(sc.Nice, 19)))
	}
	cmd = append(cmd, shell...)
	return ExecSpec{Cmd: cmd, User: runAs, Dir: dir}, nil
}

// interpreter is the trusted command a script is fed to: bash, or bash in
// POSIX mode for sh (the "#!" line's choice; sh without one), with the
// line's options, reading the script from stdin (-s).
func interpreter(script string) ([]string, error) {
	posixSh := []string{trustedBash, "--posix", "-s"}
	first, _, _ := strings.Cut(script, "\n")
	rest, ok := strings.CutPrefix(first, "#!")
	if !ok {
		return posixSh, nil
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return posixSh, nil
	}
	if f[0] == "/usr/bin/env" && len(f) > 1 { // #!/usr/bin/env bash
		f = f[1:]
		f[0] = "/bin/" + f[0]
	}
	var cmd []string
	switch f[0] {
	case "/bin/bash", "/usr/bin/bash":
		cmd = []string{trustedBash}
	case "/bin/sh", "/usr/bin/sh":
		cmd = []string{trustedBash, "--posix"}
	default:
		return nil, ErrInterpreter
	}
	for _, opt := range f[1:] {
		if !shellOption.MatchString(opt) {
			return nil, ErrInterpreterOption
		}
		cmd = append(cmd, opt)
	}
	return append(cmd, "-s"), nil
}

// shellOption is an option a "#!" line may give its shell: the shell's set
// options (-e, -eu, -x, +h, ...), never -i or -l, which would read startup
// files the learner can write.
var shellOption = regexp.MustCompile(`^[-+][aefhkmnpuvxBCEHPT]+$`)

// Errors of a script's "#!" line.
var (
	ErrInterpreter       = errs.E(errs.Invalid, "A script runs under bash or sh only: its first line must be #!/bin/bash or #!/bin/sh (or not start with #!, for sh)")
	ErrInterpreterOption = errs.E(errs.Invalid, "The #! line of a script may give its shell only set options, such as -e, -u or -x")
)

// CheckInterpreter reports whether a script can run: its "#!" line names bash
// or sh with set options only. Labs and exams call it where scripts are
// authored, so a script that could not run is refused there.
func CheckInterpreter(script string) error {
	_, err := interpreter(script)
	return err
}

// capped keeps the first max bytes written to it and drops the rest, so a
// script printing without end costs memory only up to its cap.
type capped struct {
	buf     []byte
	max     int
	dropped bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	if len(c.buf)+len(p) > c.max {
		c.dropped = true
	}
	return len(p), nil
}

func (c *capped) String() string { return strings.ToValidUTF8(string(c.buf), "\uFFFD") }

// failureLines watches a stream for lines starting "FAIL: " and keeps the
// first max of them; a line is looked at up to its first 1 KiB.
type failureLines struct {
	max   int
	line  []byte
	found []string
}

func (f *failureLines) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			f.flush()
			continue
		}
		if len(f.line) < 1024 {
			f.line = append(f.line, b)
		}
	}
	return len(p), nil
}

// flush ends the current line.
func (f *failureLines) flush() {
	line := strings.TrimRight(string(f.line), "\r")
	f.line = f.line[:0]
	if len(f.found) >= f.max {
		return
	}
	if reason, ok := strings.CutPrefix(line, "FAIL: "); ok {
		if reason = strings.TrimSpace(strings.ToValidUTF8(reason, "")); reason != "" {
			f.found = append(f.found, truncate(reason, 300))
		}
	}
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// String describes a result in one line, for logs.
func (r *Result) String() string {
	return fmt.Sprintf("exit %d, timed out %t, %d+%d bytes, %s", r.ExitCode, r.TimedOut, len(r.Stdout), len(r.Stderr), r.Duration.Round(time.Millisecond))
}

// Verdict reads a check's result by its contract: exit 0 means passed; the
// lines it printed starting "FAIL: " are the reasons shown to the learner (at
// most three). A failed check that gave no reason gets a general one.
func (r *Result) Verdict() (passed bool, feedback []string) {
	if r.OK() {
		return true, []string{}
	}
	if !r.Tampered.Clean() {
		return false, []string{r.Tampered.Reason()}
	}
	if r.TimedOut {
		return false, []string{"The check took too long and was stopped"}
	}
	feedback = r.Failures
	if len(feedback) == 0 {
		feedback = []string{"Not done yet"}
	}
	return false, feedback
}

// Transcript is the whole of a script's output with its exit status, for admins.
func (r *Result) Transcript() string {
	if !r.Tampered.Clean() {
		return "not run: the sandbox's system files were tampered with\n--- unexplained changes ---\n" + r.Tampered.String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "exit code %d", r.ExitCode)
	if r.TimedOut {
		b.WriteString(" (killed at its timeout)")
	}
	if r.Truncated {
		b.WriteString(" (output capped)")
	}
	b.WriteString("\n--- stdout ---\n")
	b.WriteString(r.Stdout)
	b.WriteString("\n--- stderr ---\n")
	b.WriteString(r.Stderr)
	return b.String()
}
