package httpapi_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/sandbox"
)

// TestTerminalOpensAtRequestedSize: the cols and rows of the query are the
// terminal's size before the shell prints anything, on every engine (Docker
// 20.10 speaks API 1.41, which has no initial exec size), without a resize.
func TestTerminalOpensAtRequestedSize(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	for _, name := range []string{"BusyBox", "Debian"} {
		t.Run(name, func(t *testing.T) {
			if name == "Debian" {
				apitest.RequireImage(t, apitest.DebianImage)
			}
			e := apitest.New(t, "sqlite")
			u := e.CreateUser("learner", auth.RoleStudent)
			c := createSandbox(t, e, u.Token, templateNamed(t, e, name))
			tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 132, 43)
			tc.Exchange("stty size\n", "43 132\r\n")
		})
	}
	t.Run("first output", func(t *testing.T) {
		// A template whose shell is stty itself: its only output is the size
		// the terminal had when it started.
		e := apitest.New(t, "sqlite")
		root := e.CreateUser("root", auth.RoleAdmin)
		u := e.CreateUser("learner", auth.RoleStudent)
		var tpl templateBody
		e.Do(apitest.Request{Method: "POST", Path: "/api/admin/sandbox-templates?name=size&image=" + apitest.TestImage + "&shell=/bin/stty+size",
			Token: root.Token}).Expect(t, http.StatusCreated).JSON(t, &tpl)
		c := createSandbox(t, e, u.Token, tpl.ID)
		tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 132, 43)
		// Everything the terminal sends until the socket closes.
		tc.AwaitControl("exit", apitest.TerminalWait)
		if err := tc.Ended(apitest.TerminalWait); websocket.CloseStatus(err) == -1 {
			t.Fatalf("reading to the end: %v", err)
		}
		if got := strings.TrimSpace(tc.Output()); got != "43 132" {
			t.Fatalf("the shell started at size %q, want 43 132", got)
		}
	})
}

// eventually polls cond every 20 ms until it holds, failing after within. It
// is a wait, not a timing assertion: how soon does not matter.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after %s", what, within)
		}
	}
}

// waitTerminalsClosed waits until the server has finished with every terminal
// it had open, processes reaped (a terminal gives its place back last).
func waitTerminalsClosed(t *testing.T, e *apitest.Env) {
	t.Helper()
	waitTerminalsOfSandboxClosed(t, e, 0)
}

// execOut runs a script as the sandbox's owner and returns its stdout.
func execOut(t *testing.T, e *apitest.Env, userID, id int64, script string) string {
	t.Helper()
	return execIn(t, e, userID, id, sandbox.Script{Text: script}).Stdout
}

// learnerRuns types script into a new terminal of sandbox id, as a learner
// would, and returns what the terminal printed up to the end marker.
func learnerRuns(t *testing.T, e *apitest.Env, token string, id int64, script string) string {
	t.Helper()
	tc := e.OpenTerminal(t, terminalPath(id), token, 200, 50)
	tc.Exchange(script+"; echo end-of-$((6*7))\n", "end-of-42")
	// What the command printed: after its echo (the last: input typed ahead
	// of the shell is echoed once more), without the terminal's
	// escape sequences.
	out := tc.Text(0)
	tc.Hangup()
	out = out[strings.LastIndex(out, "end-of-$((6*7))")+len("end-of-$((6*7))") : strings.LastIndex(out, "end-of-42")]
	return strings.TrimSpace(out)
}

// TestTerminalCloseIsAHangup: closing the socket hangs the terminal up, as
// on a real machine (lesson 05/04, lab 5): the shell and its jobs, in the
// background and in the foreground, get SIGHUP and end; what was started
// with nohup, setsid, disown or as a daemon goes on running. Today's Docker
// keeps an exec's terminal open with nobody attached, so without the relay
// everything lived on; with a kill of all the terminal's processes, nothing
// did.
func TestTerminalCloseIsAHangup(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.RequireImage(t, apitest.DebianImage)
	e, u, c := learnerSandbox(t, "Debian")
	tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
	for _, line := range []string{
		"sleep 1001 &",
		"nohup sleep 1002 > /dev/null 2>&1 &",
		"sleep 1003 & disown",
		"setsid sleep 1004 &",
		"(sleep 1005 &)", // a daemon's double fork: not a job of this shell
		"sudo sleep 1006 &",
		"printf 'pid=%s=\\n' $$",
	} {
		tc.Type(line + "\n")
	}
	shell := tc.Await(regexp.MustCompile(`pid=([0-9]+)=`), 0, apitest.TerminalWait)[1]
	tc.Type("sleep 1007\n") // in the foreground when the line drops
	eventually(t, 10*time.Second, "every sleep to start", func() bool {
		return strings.Count(execOut(t, e, u.ID, c.ID, "ps -eo args"), "sleep 100") >= 7
	})
	tc.Hangup()
	waitTerminalsClosed(t, e)

	out := learnerRuns(t, e, u.Token, c.ID, "pgrep -a sleep; test -d /proc/"+shell+" && echo shell-alive")
	for _, survivor := range []string{"sleep 1002", "sleep 1003", "sleep 1004", "sleep 1005"} {
		if !strings.Contains(out, survivor) {
			t.Errorf("%s (nohup, disown, setsid or a daemon) did not survive the hang-up:\n%s", survivor, out)
		}
	}
	for _, gone := range []string{"sleep 1001", "sleep 1006", "sleep 1007", "shell-alive"} {
		if strings.Contains(out, gone) {
			t.Errorf("%s lives on after the hang-up:\n%s", gone, out)
		}
	}
	// The learner's processes do not carry tuxlab's variables.
	if env := learnerRuns(t, e, u.Token, c.ID, "env | grep -c ^TUXLAB_"); env != "0" {
		t.Errorf("the shell's environment carries tuxlab's variables:\n%s", env)
	}
}

// TestTerminalShellThatTrapsHangupIsEnded: a shell that traps SIGHUP does
// not outlive its socket: the relay kills it after a grace, and the kernel
// then hangs up the job it was waiting for.
func TestTerminalShellThatTrapsHangupIsEnded(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e, u, c := learnerSandbox(t, "BusyBox")
	tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
	// Waiting for a command, the shell does not read the hung-up terminal,
	// whose end-of-file would end it too. (A trap, not an ignored signal,
	// which sleep would inherit.)
	tc.Type("trap 'echo hup' HUP; printf 'pid=%s=\\n' $$; sleep 3001\n")
	shell := tc.Await(regexp.MustCompile(`pid=([0-9]+)=`), 0, apitest.TerminalWait)[1]
	eventually(t, 10*time.Second, "sleep 3001 to start", func() bool {
		return strings.Contains(execOut(t, e, u.ID, c.ID, "ps -o args"), "sleep 3001")
	})
	tc.Hangup()
	waitTerminalsClosed(t, e)
	if out := execOut(t, e, u.ID, c.ID, "ps -o args; test -d /proc/"+shell+" && echo shell-alive"); strings.Contains(out, "shell-alive") || strings.Contains(out, "sleep 3001") {
		t.Fatalf("the shell %s that traps SIGHUP, or its command, outlived its terminal:\n%s", shell, out)
	}
}

// TestTerminalForkBombEndsWithTheTerminal: a fork bomb holds the sandbox at
// its pid limit, where nothing can be started in it (a reaper run through the
// engine cannot fork); closing the terminal still ends the bomb, and the
// sandbox is usable again.
func TestTerminalForkBombEndsWithTheTerminal(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.RequireImage(t, apitest.DebianImage)
	e := apitest.New(t, "sqlite")
	root := e.CreateUser("root", auth.RoleAdmin)
	u := e.CreateUser("learner", auth.RoleStudent)
	var tpl templateBody
	e.Do(apitest.Request{Method: "POST", Path: "/api/admin/sandbox-templates?name=bomb&pids_limit=128&shell=/bin/bash&image=" + apitest.DebianImage,
		Token: root.Token}).Expect(t, http.StatusCreated).JSON(t, &tpl)
	c := createSandbox(t, e, u.Token, tpl.ID)
	tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
	tc.Type("printf 'sid=%s=\\n' $$\n")
	sid := tc.Await(regexp.MustCompile(`sid=([0-9]+)=`), 0, apitest.TerminalWait)[1]
	tc.Type(":(){ :|:& };:\n")
	eventually(t, 60*time.Second, "the bomb to fill the pid limit", func() bool {
		// Between the bomb's births and deaths a slot is free now and then;
		// a check that finds none is as good a sign.
		res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(u.ID), c.ID, sandbox.Script{Text: "ps -e --no-headers | wc -l"})
		if err != nil || !res.OK() {
			return true
		}
		n, _ := strconv.Atoi(strings.TrimSpace(res.Stdout))
		return n >= 96
	})
	tc.Hangup()
	waitTerminalsClosed(t, e)
	var out string
	eventually(t, 30*time.Second, "the sandbox to answer again", func() bool {
		res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(u.ID), c.ID, sandbox.Script{Text: "ps -e -o pid,sid,args --no-headers"})
		if err == nil && res.OK() {
			out = res.Stdout
		}
		return err == nil && res.OK()
	})
	// The terminal's session is the shell's: nothing of it is left. (The
	// count of all processes is no measure: the probes above that the bomb
	// held up may still be ending.)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == sid {
			t.Fatalf("processes of the bomb's terminal (session %s) left after it closed:\n%s", sid, out)
		}
	}
	if got := learnerRuns(t, e, u.Token, c.ID, "echo the sandbox $((6*7))"); got != "the sandbox 42" {
		t.Fatalf("a new terminal printed %q", got)
	}
}

// TestTerminalOpenCloseCyclesLeaveNoShell: terminals closed as soon as they
// open, as soon as their session is announced or as soon as the shell has
// printed, four at a time, leave no shell behind (a close racing the start of
// the shell left about one in 60). Every cycle gets its shell: a batch waits
// for places, and a refusal (too many terminals) fails the test, so the count
// of cycles is the count of shells started and hung up.
func TestTerminalOpenCloseCyclesLeaveNoShell(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e, u, c := learnerSandbox(t, "BusyBox")
	// TUXLAB_TEST_TERMINAL_CYCLES runs more (the figure in docs/terminal.md).
	cycles, together := 120, 4
	if n, err := strconv.Atoi(os.Getenv("TUXLAB_TEST_TERMINAL_CYCLES")); err == nil && n > 0 {
		cycles = n
	}
	firstPid := execOut(t, e, u.ID, c.ID, "echo $$")
	url := "ws" + strings.TrimPrefix(e.URL, "http") + fmt.Sprintf("/ws/terminal/%d?token=%s", c.ID, u.Token)
	for range cycles / together {
		// Places for the whole batch: the closes of the last one may still
		// be hanging up.
		waitTerminalsOfSandboxClosed(t, e, e.Config.TerminalsPerSandbox-together)
		var wg sync.WaitGroup
		for i := range together {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				conn, _, err := websocket.Dial(ctx, url, nil)
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close(websocket.StatusNormalClosure, "bye")
				if i == 0 { // at once
					return
				}
				// The first message says whether the terminal was admitted.
				if _, b, err := conn.Read(ctx); err != nil || !strings.HasPrefix(string(b), `{"type":"session"`) {
					t.Errorf("a terminal's first message: %q, %v", b, err)
					return
				}
				if i == 1 { // once its session is announced
					return
				}
				for { // once the shell has printed something
					typ, b, err := conn.Read(ctx)
					if err != nil {
						t.Errorf("waiting for the shell's output: %v", err)
						return
					}
					if typ == websocket.MessageBinary && len(b) > 0 {
						return
					}
				}
			})
		}
		wg.Wait()
	}
	waitTerminalsClosed(t, e)
	lastPid := execOut(t, e, u.ID, c.ID, "echo $$")
	out := execOut(t, e, u.ID, c.ID, "ps -o pid,args")
	if n := strings.Count(out, "/bin/sh -l") + strings.Count(out, "tuxlab-tty"); n > 0 {
		t.Fatalf("%d shells or relays left after %d open-close cycles:\n%s", n, cycles, out)
	}
	t.Logf("%d open-close cycles; the sandbox's process ids went from %s to %s", cycles, strings.TrimSpace(firstPid), strings.TrimSpace(lastPid))
}

// TestTerminalCloseEndsSudoProcesses: what a learner starts under sudo has
// root's environment without the terminal's mark; it belongs to the
// terminal's session, and ends with it.
func TestTerminalCloseEndsSudoProcesses(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.RequireImage(t, apitest.DebianImage)
	e, u, c := learnerSandbox(t, "Debian")
	tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
	tc.Exchange("sudo sleep 1234 & sudo env -i /bin/sleep 1235 & echo started-$((40+2))\n", "started-42")
	// Both sleeps themselves, not only their sudo, so the close does not race sudo's start.
	started := func() bool {
		out := execOut(t, e, u.ID, c.ID, "ps -eo args")
		return regexp.MustCompile(`(?m)^sleep 1234$`).MatchString(out) && regexp.MustCompile(`(?m)^/bin/sleep 1235$`).MatchString(out)
	}
	eventually(t, 6*time.Second, "the sudo sleeps to start", started)
	tc.Hangup()
	waitTerminalsClosed(t, e)
	if out := execOut(t, e, u.ID, c.ID, "ps -eo pid,args"); strings.Contains(out, "sleep 123") {
		t.Fatalf("processes started under sudo survive the terminal:\n%s", out)
	}
}

// TestTerminalCyclesKeepThePidLimit: opening and closing terminals, each
// closed with a command running, never exhausts a sandbox's pid limit (it ran
// out after a dozen cycles at this limit when closed shells lived on).
func TestTerminalCyclesKeepThePidLimit(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	root := e.CreateUser("root", auth.RoleAdmin)
	u := e.CreateUser("learner", auth.RoleStudent)
	var tpl templateBody
	e.Do(apitest.Request{Method: "POST", Path: "/api/admin/sandbox-templates?name=few-pids&pids_limit=24&image=" + apitest.TestImage,
		Token: root.Token}).Expect(t, http.StatusCreated).JSON(t, &tpl)
	c := createSandbox(t, e, u.Token, tpl.ID)
	cycle := 0
	defer func() {
		if t.Failed() {
			t.Logf("failed in cycle %d", cycle)
		}
	}()
	for cycle = range 80 {
		tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
		tc.Exchange("echo up-$((40+2)); sleep 1000\n", "up-42")
		tc.Hangup()
		waitTerminalsClosed(t, e)
	}
	tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
	tc.Exchange("echo alive-$((2+3))\n", "alive-5")
}

// TestTimedOutScriptLeavesNothing: a check that times out as the learner is
// ended with what it started in the background (BusyBox's timeout kills only
// its child, and root cannot see a learner's processes' marks).
func TestTimedOutScriptLeavesNothing(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e, u, c := learnerSandbox(t, "BusyBox")
	res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(u.ID), c.ID,
		sandbox.Script{Text: "sleep 601 & sleep 600", Timeout: time.Second})
	if err != nil || !res.TimedOut {
		t.Fatalf("%+v %v", res, err)
	}
	if out := execOut(t, e, u.ID, c.ID, "ps -o args"); strings.Contains(out, "sleep 60") {
		t.Fatalf("the timed-out script's processes survive:\n%s", out)
	}
}

// TestTerminalResizeFlood: thousands of resize messages at once leave the
// terminal at the last size asked for, and the shell still answers.
func TestTerminalResizeFlood(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e, u, c := learnerSandbox(t, "BusyBox")
	tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
	for i := range 5000 {
		tc.SendControl(map[string]any{"type": "resize", "cols": 20 + i%900, "rows": 10 + i%500})
	}
	tc.SendControl(map[string]any{"type": "resize", "cols": 123, "rows": 45})
	// Input waits for the resizes sent before it: the first stty sees the last size.
	from := len(tc.Output())
	tc.Type("echo size=$(stty size)=\n")
	if got := tc.Await(regexp.MustCompile(`size=([0-9]+ [0-9]+)=`), from, apitest.TerminalWait)[1]; got != "45 123" {
		t.Fatalf("the terminal is at %s after the flood, want 45 123", got)
	}
	tc.Exchange("echo still-$((6*7))\n", "still-42")
}

// TestTerminalsEndWhenAccessEnds: a user deactivated or deleted by an admin,
// whose password changes, or who logs out, loses their open terminals at
// once (no periodic check runs here), with the reason; their processes end;
// other users' terminals go on.
func TestTerminalsEndWhenAccessEnds(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		root := e.CreateUser("root", auth.RoleAdmin)
		tpl := busyboxTemplate(t, e)
		bystander := e.CreateUser("bystander", auth.RoleStudent)
		other := e.OpenTerminal(t, createSandbox(t, e, bystander.Token, tpl).TerminalURL, bystander.Token, 80, 24)
		cases := []struct {
			name   string
			act    func(u *apitest.User)
			status int
			detail string
		}{
			{"deactivated", func(u *apitest.User) {
				e.Do(apitest.Request{Method: "PUT", Path: fmt.Sprintf("/api/admin/users/%d/active?is_active=false", u.ID), Token: root.Token}).Expect(t, 200)
			}, 403, "User account is inactive"},
			{"deleted", func(u *apitest.User) {
				e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/admin/users/%d", u.ID), Token: root.Token}).Expect(t, 200)
			}, 401, "User not found"},
			{"password changed", func(u *apitest.User) {
				e.Do(apitest.Request{Method: "PUT", Path: "/api/profile/password", Token: u.Token,
					Body: map[string]any{"current_password": apitest.Password, "new_password": "another long password"}}).Expect(t, 200)
			}, 401, "The password of this account changed: sign in again"},
			{"logged out", func(u *apitest.User) {
				e.Do(apitest.Request{Method: "POST", Path: "/api/auth/logout", Token: u.Token}).Expect(t, 200)
			}, 401, "You logged out: sign in again"},
		}
		for _, tt := range cases {
			u := e.CreateUser(strings.ReplaceAll(tt.name, " ", "-"), auth.RoleStudent)
			c := createSandbox(t, e, u.Token, tpl)
			tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
			tc.Type("echo ready-$((1+1)); sleep 1000\n") // in the foreground: ash, unlike bash, leaves background jobs to a hang-up
			tc.AwaitText("ready-2", 0)
			tt.act(u)
			tc.ExpectClosed(tt.status, tt.detail)
			if tt.name != "deleted" { // a deleted user's sandboxes go with the rows
				waitTerminalsOfSandboxClosed(t, e, 1)
				if out := execOut(t, e, u.ID, c.ID, "ps -o args"); strings.Contains(out, "sleep 1000") {
					t.Fatalf("%s: the terminal's processes survive:\n%s", tt.name, out)
				}
			}
		}
		other.Exchange("echo still-$((6*7))\n", "still-42")
	}, func(c *config.Config) { c.TerminalPingInterval = time.Hour })
}

// waitTerminalsOfSandboxClosed waits until only n terminals remain open.
func waitTerminalsOfSandboxClosed(t *testing.T, e *apitest.Env, n int) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("at most %d terminals open", n), func() bool { return e.App.Terminals.Open() <= n })
}

// TestTerminalEndsWhenAnotherProcessDeactivates: a change this process does
// not hear of (another replica, the command line) still ends the terminal, at
// its next check.
func TestTerminalEndsWhenAnotherProcessDeactivates(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.TerminalPingInterval = 200 * time.Millisecond })
	u := e.CreateUser("learner", auth.RoleStudent)
	tc := e.OpenTerminal(t, createSandbox(t, e, u.Token, busyboxTemplate(t, e)).TerminalURL, u.Token, 80, 24)
	tc.Exchange("echo ready-$((1+1))\n", "ready-2")
	if _, err := e.DB.Users().UpdateUser(context.Background(), u.ID, func(u *auth.User, _ int) error { u.IsActive = false; return nil }); err != nil {
		t.Fatal(err)
	}
	tc.ExpectClosed(403, "User account is inactive")
}

// TestShutdownEndsTerminals: stopping the server ends every terminal with a
// reason and kills their processes before Serve returns.
func TestShutdownEndsTerminals(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e, u, c := learnerSandbox(t, "BusyBox")
	// The same application served by App.Serve, as tuxlab serve runs it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- e.App.Serve(ctx, ln, 30*time.Second) }()
	tc := apitest.DialTerminalURL(t, fmt.Sprintf("ws://%s/ws/terminal/%d?token=%s", ln.Addr(), c.ID, u.Token), nil)
	tc.Type("echo ready-$((1+1)); sleep 1000\n") // in the foreground: ash, unlike bash, leaves background jobs to a hang-up
	tc.AwaitText("ready-2", 0)
	stop()
	tc.ExpectClosed(503, "The server is shutting down: open the terminal again in a moment")
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if out := execOut(t, e, u.ID, c.ID, "ps -o args"); strings.Contains(out, "sleep 1000") {
		t.Fatalf("the terminal's processes survive the shutdown:\n%s", out)
	}
}

// TestTerminalRefusalsReachBrowsers: what refuses a terminal reaches a
// WebSocket client as an error message and a close code it can read (a
// browser sees only 1006 when an upgrade is refused), and a plain HTTP
// client as the same status; a plain request that passes every check is 426.
func TestTerminalRefusalsReachBrowsers(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.TerminalsPerSandbox = 1 })
	owner := e.CreateUser("owner", auth.RoleStudent)
	other := e.CreateUser("other", auth.RoleStudent)
	tpl := busyboxTemplate(t, e)
	running := createSandbox(t, e, owner.Token, tpl)
	stopped := createSandbox(t, e, owner.Token, tpl)
	stopSandbox(t, e, owner.Token, stopped.ID)
	busy := createSandbox(t, e, other.Token, tpl)
	taken := e.OpenTerminal(t, busy.TerminalURL, other.Token, 80, 24) // its one place
	taken.Exchange("echo taken-$((1+1))\n", "taken-2")
	evil := http.Header{"Origin": {"https://evil.example.net"}}
	cases := []struct {
		name   string
		query  string
		header http.Header
		status int
		detail string
	}{
		{"foreign origin", fmt.Sprintf("%d?token=%s", running.ID, owner.Token), evil, 403, "Origin not allowed"},
		{"bad size", fmt.Sprintf("%d?token=%s&cols=0", running.ID, owner.Token), nil, 422, "cols: Input should be between 1 and 1000"},
		{"bad token", fmt.Sprintf("%d?token=not-a-token", running.ID), nil, 401, "Could not validate credentials"},
		{"no token", fmt.Sprintf("%d", running.ID), nil, 401, "Not authenticated"},
		{"another user's", fmt.Sprintf("%d?token=%s", running.ID, other.Token), nil, 404, "Container not found"},
		{"no such sandbox", fmt.Sprintf("999999?token=%s", owner.Token), nil, 404, "Container not found"},
		{"stopped", fmt.Sprintf("%d?token=%s", stopped.ID, owner.Token), nil, 409, "Container is not running: start it first"},
		{"no place left", fmt.Sprintf("%d?token=%s", busy.ID, other.Token), nil, 409, "Too many terminals open on this sandbox (at most 1): close one first"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			e.DialTerminal(t, "/ws/terminal/"+tt.query, tt.header).ExpectClosed(tt.status, tt.detail)
			// The same request without an upgrade: plain HTTP.
			r := e.Do(apitest.Request{Method: "GET", Path: "/ws/terminal/" + tt.query, Header: tt.header}).Expect(t, tt.status)
			if tt.status != 422 && r.Detail() != tt.detail {
				t.Fatalf("plain HTTP detail %q, want %q", r.Detail(), tt.detail)
			}
		})
	}
	t.Run("plain request that passes", func(t *testing.T) {
		r := e.Do(apitest.Request{Method: "GET", Path: fmt.Sprintf("/ws/terminal/%d?token=%s", running.ID, owner.Token)}).Expect(t, http.StatusUpgradeRequired)
		if !strings.Contains(r.Detail(), "WebSocket") {
			t.Fatalf("detail %q", r.Detail())
		}
		// It took no place: a terminal still opens.
		tc := e.OpenTerminal(t, running.TerminalURL, owner.Token, 80, 24)
		tc.Exchange("echo open-$((1+1))\n", "open-2")
	})
	t.Run("shutting down", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.App.Terminals.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		query := fmt.Sprintf("%d?token=%s", running.ID, owner.Token)
		e.DialTerminal(t, "/ws/terminal/"+query, nil).ExpectClosed(503, "The server is shutting down: open the terminal again in a moment")
		r := e.Do(apitest.Request{Method: "GET", Path: "/ws/terminal/" + query}).Expect(t, 503)
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("503 without Retry-After")
		}
	})
}

// TestTerminalEarlyResizeWins: a resize sent as soon as the socket opens,
// while the shell is still starting, is not undone by the initial size.
func TestTerminalEarlyResizeWins(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e, u, c := learnerSandbox(t, "BusyBox")
	sizeRe := regexp.MustCompile(`size=([0-9]+ [0-9]+)=`)
	for range 20 {
		tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 132, 43)
		tc.SendControl(map[string]any{"type": "resize", "cols": 100, "rows": 33})
		tc.Type("echo size=$(stty size)=\n")
		if got := tc.Await(sizeRe, 0, apitest.TerminalWait)[1]; got != "33 100" {
			t.Fatalf("the terminal is at %s, want the 33 100 asked for as it opened", got)
		}
		tc.Hangup()
		waitTerminalsClosed(t, e)
	}
}
