package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"
	"golang.org/x/sys/unix"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/store/storetest"
)

// The client's commands run against the real server (apitest: the real
// app on httptest, a real database, the real engine for sandboxes). Commands
// run in the test's process through run, or as a real process (the test
// binary running main, see TestMain) where the exit code or a terminal is
// what is tested.

// TestMain lets a test run this binary as the tuxlab program itself:
// with TUXLAB_TEST_MAIN=1 it is main, with the arguments it was given.
func TestMain(m *testing.M) {
	if os.Getenv("TUXLAB_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// cliUser is a command-line user: a configuration directory of their own.
type cliUser struct {
	t    *testing.T
	home string
}

func newUser(t *testing.T) *cliUser { return &cliUser{t: t, home: t.TempDir()} }

func (u *cliUser) getenv(k string) string {
	if k == "HOME" {
		return u.home
	}
	return ""
}

// run runs the command in this process with stdin.
func (u *cliUser) run(stdin string, args ...string) (string, string, error) {
	u.t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, u.getenv, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), err
}

// process is the command as a real process of the test binary, for the user.
func (u *cliUser) process(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = []string{"TUXLAB_TEST_MAIN=1", "HOME=" + u.home, "PATH=" + os.Getenv("PATH")}
	return cmd
}

// exec runs the command as a process with stdin and returns its output and exit code.
func (u *cliUser) exec(stdin string, args ...string) (string, string, int) {
	u.t.Helper()
	cmd := u.process(args...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		u.t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

func (u *cliUser) credentials() string {
	return filepath.Join(u.home, ".config", "tuxlab", "credentials.json")
}

// login logs the user in to e as name with the fixture password.
func (u *cliUser) login(e *apitest.Env, name string) {
	u.t.Helper()
	if out, errOut, err := u.run(apitest.Password+"\n", "login", "--server", e.URL, name); err != nil || !strings.Contains(out, "logged in to "+e.URL+" as "+name) {
		u.t.Fatalf("login: %q %q %v", out, errOut, err)
	}
}

func TestClientLogin(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		e.CreateUser("ada", auth.RoleStudent)
		u := newUser(t)
		if _, _, err := u.run("", "sandboxes"); err == nil || !strings.Contains(err.Error(), "run tuxlab login") {
			t.Fatalf("before login: %v", err)
		}
		// A wrong password: the server's words, exit code 1, nothing saved.
		_, errOut, code := u.exec("not-the-password\n", "login", "--server", e.URL, "ada")
		if code != 1 || !strings.Contains(errOut, "Incorrect username or password") {
			t.Fatalf("wrong password: exit %d, %q", code, errOut)
		}
		if _, err := os.Stat(u.credentials()); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("credentials after a failed login: %v", err)
		}
		u.login(e, "ada")
		fi, err := os.Stat(u.credentials())
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("credentials file: %v %v, want mode 0600", fi, err)
		}
		if di, err := os.Stat(filepath.Dir(u.credentials())); err != nil || di.Mode().Perm() != 0o700 {
			t.Fatalf("credentials directory: %v %v, want mode 0700", di, err)
		}
		if out, _, err := u.run("", "sandboxes"); err != nil || !strings.Contains(out, "no sandboxes") {
			t.Fatalf("sandboxes: %q %v", out, err)
		}
		// Logging in again goes to the same server without --server.
		if out, _, err := u.run(apitest.Password+"\n", "login", "ada"); err != nil || !strings.Contains(out, "logged in to "+e.URL) {
			t.Fatalf("login again: %q %v", out, err)
		}
		// A file others may read is refused, saying how to fix it.
		os.Chmod(u.credentials(), 0o644)
		if _, _, err := u.run("", "sandboxes"); err == nil || !strings.Contains(err.Error(), "chmod 600 "+u.credentials()) {
			t.Fatalf("credentials readable by others: %v", err)
		}
		os.Chmod(u.credentials(), 0o600)
		// Logout revokes the token on the server: a copy of it is refused
		// there, and the client says to log in again.
		saved, err := os.ReadFile(u.credentials())
		if err != nil {
			t.Fatal(err)
		}
		if out, _, err := u.run("", "logout"); err != nil || !strings.Contains(out, "logged out") {
			t.Fatalf("logout: %q %v", out, err)
		}
		if _, err := os.Stat(u.credentials()); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("credentials after logout: %v", err)
		}
		if err := os.WriteFile(u.credentials(), saved, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := u.run("", "sandboxes"); err == nil || !strings.Contains(err.Error(), "token expired or was revoked: run tuxlab login") {
			t.Fatalf("revoked token: %v", err)
		}
	})
}

// templateNamed is the id of the seeded template called name.
func templateNamed(t *testing.T, e *apitest.Env, name string) int64 {
	t.Helper()
	var ts []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	e.Get("/api/sandbox-templates", "").Expect(t, 200).JSON(t, &ts)
	for _, tpl := range ts {
		if tpl.Name == name {
			return tpl.ID
		}
	}
	t.Fatalf("no template %q", name)
	return 0
}

// createSandbox starts a sandbox of template for learner, removed when t ends.
func createSandbox(t *testing.T, e *apitest.Env, learner *apitest.User, template int64) int64 {
	t.Helper()
	var c struct {
		ID int64 `json:"id"`
	}
	e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: learner.Token,
		Body: map[string]any{"template_id": template}}).Expect(t, 201).JSON(t, &c)
	t.Cleanup(func() { e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), c.ID) })
	return c.ID
}

func TestClientSandboxesAndCopy(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	learner := e.CreateUser("ada", auth.RoleStudent)
	u := newUser(t)
	u.login(e, "ada")
	if _, _, err := u.run("", "shell"); err == nil || !strings.Contains(err.Error(), "you have no sandbox") {
		t.Fatalf("shell without a sandbox: %v", err)
	}
	id := createSandbox(t, e, learner, templateNamed(t, e, "BusyBox"))
	out, _, err := u.run("", "sandboxes")
	if err != nil || !regexp.MustCompile(`(?m)^ID +NAME +TEMPLATE +KIND +STATUS\n`+fmt.Sprint(id)+` +BusyBox +BusyBox +container +running\n$`).MatchString(out) {
		t.Fatalf("sandboxes: %q %v", out, err)
	}
	// Piped input is typed as it comes, and its end is the shell's end of input.
	if out, errOut, err := u.run("echo piped-$((6*7))\n", "shell"); err != nil || !strings.Contains(out, "\npiped-42\r\n") {
		t.Fatalf("shell with piped input: %q %q %v", out, errOut, err)
	}
	copyBothWays(t, e, u, learner, id, "can't create /no/such/dir/x")
	if _, _, err := u.run("", "cp", "nowhere", "elsewhere"); err == nil || !strings.Contains(err.Error(), "ID:PATH") {
		t.Fatalf("cp with no sandbox side: %v", err)
	}
	if _, _, err := u.run("", "cp", "999999:/etc/hosts", t.TempDir()); err == nil || !strings.Contains(err.Error(), "cannot open a terminal on sandbox 999999: Container not found") {
		t.Fatalf("cp from another's or no sandbox: %v", err)
	}
	if _, _, err := u.run("", "shell", "999999"); err == nil || err.Error() != "cannot open a terminal on sandbox 999999: Container not found" {
		t.Fatalf("shell of another's or no sandbox: %v", err)
	}
}

// TestClientCopyDebian copies through bash and coreutils, the learners' image.
func TestClientCopyDebian(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.RequireImage(t, apitest.DebianImage)
	e := apitest.New(t, "sqlite")
	learner := e.CreateUser("ada", auth.RoleStudent)
	u := newUser(t)
	u.login(e, "ada")
	id := createSandbox(t, e, learner, templateNamed(t, e, "Debian"))
	copyBothWays(t, e, u, learner, id, "/no/such/dir/x: No such file or directory")
}

// copyBothWays copies files into sandbox id and back out, and checks the
// errors of the sandbox side: noDir is the shell's words for a missing directory.
func copyBothWays(t *testing.T, e *apitest.Env, u *cliUser, learner *apitest.User, id int64, noDir string) {
	t.Helper()
	// A file of every byte value, in and back out, byte for byte.
	data := make([]byte, 200<<10)
	rand.Read(data)
	for i := range 256 {
		data[i] = byte(i)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "blob.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := u.run("", "cp", src, fmt.Sprintf("%d:/tmp/", id)); err != nil {
		t.Fatalf("cp in: %v %s", err, errOut)
	}
	// The file is where it was asked to go, as the sandbox sees it.
	res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(learner.ID), id, sandbox.Script{Text: "wc -c < /tmp/blob.bin", Timeout: time.Minute})
	if err != nil || strings.TrimSpace(res.Stdout) != fmt.Sprint(len(data)) {
		t.Fatalf("in the sandbox: %v %+v", err, res)
	}
	back := filepath.Join(dir, "back.bin")
	if _, errOut, err := u.run("", "cp", fmt.Sprintf("%d:/tmp/blob.bin", id), back); err != nil {
		t.Fatalf("cp out: %v %s", err, errOut)
	}
	if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("copied back %d bytes (%v), want the %d sent", len(got), err, len(data))
	}
	// An empty file, and a name that needs quoting.
	empty := filepath.Join(dir, "it's empty")
	os.WriteFile(empty, nil, 0o644)
	if _, errOut, err := u.run("", "cp", empty, fmt.Sprintf("%d:/tmp/", id)); err != nil {
		t.Fatalf("cp an empty file: %v %s", err, errOut)
	}
	if _, _, err := u.run("", "cp", fmt.Sprintf("%d:/tmp/it's empty", id), filepath.Join(dir, "empty-back")); err != nil {
		t.Fatalf("cp an empty file back: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "empty-back")); err != nil || fi.Size() != 0 {
		t.Fatalf("empty file back: %v %v", fi, err)
	}
	// The errors of the sandbox side, in its shell's words.
	if _, _, err := u.run("", "cp", fmt.Sprintf("%d:/tmp/nothing-here", id), dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("cp of a missing file: %v", err)
	}
	if _, _, err := u.run("", "cp", src, fmt.Sprintf("%d:/no/such/dir/x", id)); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("copy to sandbox %d: ", id)) || !strings.Contains(err.Error(), noDir) {
		t.Fatalf("cp to a missing directory: %v", err)
	}
}

// openPTY opens a pseudo-terminal pair of cols × rows.
func openPTY(t *testing.T, cols, rows uint16) (master, slave *os.File) {
	t.Helper()
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(mfd), uintptr(unix.TIOCGPTPEER), uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		t.Fatal(errno)
	}
	master, slave = os.NewFile(uintptr(mfd), "ptmx"), os.NewFile(sfd, "pts")
	setSize(t, master, cols, rows)
	t.Cleanup(func() { master.Close(); slave.Close() })
	return master, slave
}

// setSize resizes the terminal as a terminal window does: the kernel
// signals SIGWINCH to the terminal's foreground process group.
func setSize(t *testing.T, f *os.File, cols, rows uint16) {
	t.Helper()
	if err := unix.IoctlSetWinsize(int(f.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		t.Fatal(err)
	}
}

// screen collects what a pseudo-terminal's program prints.
type screen struct {
	mu      sync.Mutex
	out     []byte
	changed chan struct{}
}

func readScreen(master *os.File) *screen {
	s := &screen{changed: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			s.mu.Lock()
			s.out = append(s.out, buf[:n]...)
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return s
}

// await waits up to within for re in what was printed from byte from on,
// and returns where its match ends; ok is false when it never came.
func (s *screen) await(re *regexp.Regexp, from int, within time.Duration) (int, bool) {
	deadline := time.After(within)
	for {
		s.mu.Lock()
		out, changed := s.out, s.changed
		s.mu.Unlock()
		if from < len(out) {
			if loc := re.FindIndex(out[from:]); loc != nil {
				return from + loc[1], true
			}
		}
		select {
		case <-changed:
		case <-deadline:
			return len(out), false
		}
	}
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.out)
}

// TestClientShellInATerminal drives tuxlab shell as a user does, in a
// pseudo-terminal that is the process's controlling terminal: what is typed
// runs in the sandbox, a window resize reaches the shell, and the terminal
// is as it was once the shell exits, with the shell's exit code.
func TestClientShellInATerminal(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	learner := e.CreateUser("ada", auth.RoleStudent)
	u := newUser(t)
	u.login(e, "ada")
	createSandbox(t, e, learner, templateNamed(t, e, "BusyBox"))

	master, slave := openPTY(t, 80, 24)
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	cmd := u.process("shell") // no id: the only running sandbox
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	scr := readScreen(master)
	typeIn := func(s string) {
		t.Helper()
		if _, err := master.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}

	typeIn("echo hello-$((6*7))\r")
	at, ok := scr.await(regexp.MustCompile(`hello-42`), 0, time.Minute)
	if !ok {
		t.Fatalf("no hello-42 from the sandbox; the terminal shows %q", scr)
	}
	// While the client runs, the terminal is raw: the client sends every key on.
	if raw, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS); err != nil || raw.Lflag&(unix.ICANON|unix.ECHO) != 0 {
		t.Fatalf("terminal while the shell runs: %+v %v, want raw", raw, err)
	}

	setSize(t, master, 101, 33)
	// The resize and what is typed next travel apart (a signal, a read of
	// the terminal): ask again until the new size shows.
	sized := regexp.MustCompile(`\b33 101\b`)
	for try := 0; ; try++ {
		typeIn("stty size\r")
		if _, ok := scr.await(sized, at, 5*time.Second); ok {
			break
		}
		if try == 10 {
			t.Fatalf("stty size never said 33 101; the terminal shows %q", scr)
		}
	}

	typeIn("exit 3\r")
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Fatalf("tuxlab shell ended with %v, want the shell's exit code 3; the terminal shows %q", err, scr)
		}
		// An exit is no error of the server's: nothing is said about it.
		// (A mark written after the process ended comes after all it wrote.)
		slave.WriteString("[end of the client]")
		if _, ok := scr.await(regexp.MustCompile(`\[end of the client\]`), at, time.Minute); !ok || strings.Contains(scr.String(), "tuxlab: ") {
			t.Fatalf("the client said something after the shell's exit: %q", scr)
		}
	case <-time.After(time.Minute):
		t.Fatalf("tuxlab shell did not end after exit; the terminal shows %q", scr)
	}
	after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Fatalf("the terminal was left as %+v, not restored to %+v", after, before)
	}
}

// TestClientShellEndedByTheServer: when the server ends the terminal (here
// the user logged out elsewhere, which revokes every token of theirs), the
// client restores the terminal, prints the server's reason and exits 1.
func TestClientShellEndedByTheServer(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	learner := e.CreateUser("ada", auth.RoleStudent)
	u := newUser(t)
	u.login(e, "ada")
	id := createSandbox(t, e, learner, templateNamed(t, e, "BusyBox"))

	master, slave := openPTY(t, 80, 24)
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	cmd := u.process("shell", fmt.Sprint(id))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	scr := readScreen(master)
	master.WriteString("echo ready-$((40+2))\r")
	if _, ok := scr.await(regexp.MustCompile(`ready-42`), 0, time.Minute); !ok {
		t.Fatalf("the shell did not answer; the terminal shows %q", scr)
	}
	// The web page's logout, with a token of the same user.
	e.Do(apitest.Request{Method: "POST", Path: "/api/auth/logout", Token: e.Token(learner.User)}).Expect(t, 200)
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("tuxlab shell ended with %v, want exit code 1; the terminal shows %q", err, scr)
		}
	case <-time.After(time.Minute):
		t.Fatalf("tuxlab shell did not end after the logout; the terminal shows %q", scr)
	}
	if _, ok := scr.await(regexp.MustCompile(`\n\r?tuxlab: the terminal was closed: You logged out.*\(your token expired or was revoked: run tuxlab login\)`), 0, 10*time.Second); !ok {
		t.Fatalf("no reason printed; the terminal shows %q", scr)
	}
	if after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS); err != nil || *after != *before {
		t.Fatalf("the terminal was left as %+v (%v), not restored to %+v", after, err, before)
	}
}

// TestClientLabCheck checks a bundled laboratory from the command line: a
// fresh attempt's tasks fail, each is listed, and the exit code is 1.
func TestClientLabCheck(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.RequireImage(t, apitest.DebianImage)
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.BundledCurriculum = true })
	e.CreateUser("ada", auth.RoleStudent)
	u := newUser(t)
	u.login(e, "ada")
	var labs []struct {
		ID    int64  `json:"id"`
		Slug  string `json:"slug"`
		Tasks []struct {
			Title string `json:"title"`
		} `json:"tasks"`
	}
	e.Get("/api/laboratories", "").Expect(t, 200).JSON(t, &labs)
	if len(labs) == 0 {
		t.Fatal("no bundled laboratory")
	}
	lab := labs[0]
	id := fmt.Sprint(lab.ID)
	if _, _, err := u.run("", "lab", "check", id); err == nil || !strings.Contains(err.Error(), "tuxlab lab start "+id) {
		t.Fatalf("check before start: %v", err)
	}
	out, _, err := u.run("", "lab", "start", id)
	if err != nil || !strings.Contains(out, "tuxlab shell ") {
		t.Fatalf("lab start: %q %v", out, err)
	}
	out, errOut, code := u.exec("", "lab", "check", id)
	if code != 1 || !strings.Contains(out, "FAIL  ") || !strings.Contains(out, fmt.Sprintf("0 of %d tasks pass", len(lab.Tasks))) {
		t.Fatalf("check of a fresh attempt: exit %d, %q %q", code, out, errOut)
	}
	for _, task := range lab.Tasks {
		if !strings.Contains(out, "FAIL  "+task.Title+"\n") {
			t.Fatalf("task %q not reported as failing in %q", task.Title, out)
		}
	}
}

// TestClientLoginTwoFactor: with two-factor sign-in on, login asks for the
// code the server asks for (here the next line of stdin) and sends the
// login again with it.
func TestClientLoginTwoFactor(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			now := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			e := apitest.New(t, eng, func(c *config.Config) { c.TOTPNow = clock })
			clientTwoFactor(t, e, clock, func() { mu.Lock(); now = now.Add(30 * time.Second); mu.Unlock() })
		})
	}
}

// clientTwoFactor is TestClientLoginTwoFactor on e, whose two-factor
// clock is clock, moved on by tick to the next time step.
func clientTwoFactor(t *testing.T, e *apitest.Env, clock func() time.Time, tick func()) {
	ada := e.CreateUser("ada", auth.RoleStudent)
	var setup struct {
		Secret string `json:"secret"`
	}
	e.Do(apitest.Request{Method: "POST", Path: "/api/auth/mfa/setup", Token: ada.Token}).Expect(t, 200).JSON(t, &setup)
	code := func(at time.Time) string {
		c, err := totp.GenerateCode(setup.Secret, at)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	e.Do(apitest.Request{Method: "POST", Path: "/api/auth/mfa/enable", Token: ada.Token,
		Body: map[string]string{"code": code(clock())}}).Expect(t, 200)
	u := newUser(t)
	if _, _, err := u.run(apitest.Password+"\n", "login", "--server", e.URL, "ada"); err == nil || !strings.Contains(err.Error(), "no two-factor code on stdin") {
		t.Fatalf("login without a code: %v", err)
	}
	_, errOut, exit := u.exec(apitest.Password+"\n000000\n", "login", "--server", e.URL, "ada")
	if exit != 1 || !strings.Contains(errOut, "Incorrect two-factor code") {
		t.Fatalf("a wrong code: exit %d, %q", exit, errOut)
	}
	// The next time step's code (the one enable used works once).
	tick()
	out, errOut, err := u.run(apitest.Password+"\n"+code(clock())+"\n", "login", "--server", e.URL, "ada")
	if err != nil || !strings.Contains(out, "logged in") {
		t.Fatalf("login with the code: %q %q %v", out, errOut, err)
	}
	if out, _, err := u.run("", "sandboxes"); err != nil || !strings.Contains(out, "no sandboxes") {
		t.Fatalf("sandboxes with the token: %q %v", out, err)
	}
}
