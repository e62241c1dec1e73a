package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
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

// templateNamed returns the id of the seeded template called name.
func templateNamed(t *testing.T, e *apitest.Env, name string) int64 {
	t.Helper()
	var ts []templateBody
	e.Get("/api/sandbox-templates", "").Expect(t, 200).JSON(t, &ts)
	for _, tpl := range ts {
		if tpl.Name == name {
			return tpl.ID
		}
	}
	t.Fatalf("no template %q in %+v", name, ts)
	return 0
}

// dialSized opens a terminal asking for a size in the query.
func dialSized(t *testing.T, e *apitest.Env, id int64, token string, cols, rows int) *termClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(e.URL, "http") + fmt.Sprintf("/ws/terminal/%d?token=%s&cols=%d&rows=%d", id, token, cols, rows)
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return &termClient{t: t, conn: conn}
}

// readToEnd collects everything the terminal sends until the socket closes.
func (tc *termClient) readToEnd() {
	tc.t.Helper()
	tc.waitFor("ctl:exit")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		mt, data, err := tc.conn.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == -1 {
				tc.t.Fatalf("reading to the end: %v", err)
			}
			return
		}
		if mt == websocket.MessageBinary {
			tc.out.Write(data)
		}
	}
}

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
			tc := dialSized(t, e, c.ID, u.Token, 132, 43)
			tc.send("stty size\n")
			tc.waitFor("43 132\r\n")
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
		tc := dialSized(t, e, c.ID, u.Token, 132, 43)
		tc.readToEnd()
		if got := strings.TrimSpace(tc.out.String()); got != "43 132" {
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
	res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(userID), id, sandbox.Script{Text: script})
	if err != nil {
		t.Fatal(err)
	}
	return res.Stdout
}

// learnerRuns types script into a new terminal of sandbox id, as a learner
// would, and returns what the terminal printed up to the end marker.
func learnerRuns(t *testing.T, e *apitest.Env, token string, id int64, script string) string {
	t.Helper()
	tc := dialSized(t, e, id, token, 200, 50)
	tc.send(script + "; echo end-of-$((6*7))\n")
	tc.waitFor("end-of-42")
	out := tc.out.String()
	tc.conn.Close(websocket.StatusNormalClosure, "bye")
	// What the command printed: after its echo (the last: input typed ahead
	// of the shell is echoed once more), without the terminal's
	// escape sequences.
	out = strings.ReplaceAll(ansi.ReplaceAllString(out, ""), "\r", "")
	out = out[strings.LastIndex(out, "end-of-$((6*7))")+len("end-of-$((6*7))") : strings.LastIndex(out, "end-of-42")]
	return strings.TrimSpace(out)
}

// ansi matches the escape sequences a terminal prints.
var ansi = regexp.MustCompile(`\x1b(\[[0-9;?]*[a-zA-Z]|\][^\x07]*\x07)`)

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
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	c := createSandbox(t, e, u.Token, templateNamed(t, e, "Debian"))
	tc := dialSized(t, e, c.ID, u.Token, 80, 24)
	for _, line := range []string{
		"sleep 1001 &",
		"nohup sleep 1002 > /dev/null 2>&1 &",
		"sleep 1003 & disown",
		"setsid sleep 1004 &",
		"(sleep 1005 &)", // a daemon's double fork: not a job of this shell
		"sudo sleep 1006 &",
		"printf 'pid=%s=\\n' $$",
	} {
		tc.send(line + "\n")
	}
	shell := tc.waitForMatch(regexp.MustCompile(`pid=([0-9]+)=`))
	tc.send("sleep 1007\n") // in the foreground when the line drops
	eventually(t, 10*time.Second, "every sleep to start", func() bool {
		return strings.Count(execOut(t, e, u.ID, c.ID, "ps -eo args"), "sleep 100") >= 7
	})
	tc.conn.Close(websocket.StatusNormalClosure, "bye")
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
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	c := createSandbox(t, e, u.Token, busyboxTemplate(t, e))
	tc := dialSized(t, e, c.ID, u.Token, 80, 24)
	// Waiting for a command, the shell does not read the hung-up terminal,
	// whose end-of-file would end it too. (A trap, not an ignored signal,
	// which sleep would inherit.)
	tc.send("trap 'echo hup' HUP; printf 'pid=%s=\\n' $$; sleep 3001\n")
	shell := tc.waitForMatch(regexp.MustCompile(`pid=([0-9]+)=`))
	eventually(t, 10*time.Second, "sleep 3001 to start", func() bool {
		return strings.Contains(execOut(t, e, u.ID, c.ID, "ps -o args"), "sleep 3001")
	})
	tc.conn.Close(websocket.StatusNormalClosure, "bye")
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
	tc := dialSized(t, e, c.ID, u.Token, 80, 24)
	tc.send(":(){ :|:& };:\n")
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
	tc.conn.Close(websocket.StatusNormalClosure, "bye")
	waitTerminalsClosed(t, e)
	var out string
	eventually(t, 30*time.Second, "the sandbox to answer again", func() bool {
		res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(u.ID), c.ID, sandbox.Script{Text: "ps -e -o pid,sid,args --no-headers"})
		if err == nil && res.OK() {
			out = res.Stdout
		}
		return err == nil && res.OK()
	})
	if n := strings.Count(out, "\n"); n > 12 {
		t.Fatalf("%d processes left after the bomb's terminal closed:\n%s", n, out)
	}
	if got := learnerRuns(t, e, u.Token, c.ID, "echo the sandbox $((6*7))"); got != "the sandbox 42" {
		t.Fatalf("a new terminal printed %q", got)
	}
}

// TestTerminalOpenCloseCyclesLeaveNoShell: terminals closed as soon as they
// open or as soon as the shell has printed, four at a time, leave no shell
// behind (a close racing the start of the shell left about one in 60).
func TestTerminalOpenCloseCyclesLeaveNoShell(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	c := createSandbox(t, e, u.Token, busyboxTemplate(t, e))
	// TUXLAB_TEST_TERMINAL_CYCLES runs more (the figure in docs/terminal.md).
	cycles, together := 120, 4
	if n, err := strconv.Atoi(os.Getenv("TUXLAB_TEST_TERMINAL_CYCLES")); err == nil && n > 0 {
		cycles = n
	}
	for range cycles / together {
		var wg sync.WaitGroup
		for i := range together {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				url := "ws" + strings.TrimPrefix(e.URL, "http") + fmt.Sprintf("/ws/terminal/%d?token=%s", c.ID, u.Token)
				conn, _, err := websocket.Dial(ctx, url, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if i%2 == 1 { // half of them once the shell has printed something
					if _, _, err := conn.Read(ctx); err != nil {
						t.Error(err)
					}
				}
				conn.Close(websocket.StatusNormalClosure, "bye")
			})
		}
		wg.Wait()
	}
	waitTerminalsClosed(t, e)
	out := execOut(t, e, u.ID, c.ID, "ps -o pid,args")
	if n := strings.Count(out, "/bin/sh -l") + strings.Count(out, "tuxlab-tty"); n > 0 {
		t.Fatalf("%d shells or relays left after %d open-close cycles:\n%s", n, cycles, out)
	}
}

// TestTerminalCloseEndsSudoProcesses: what a learner starts under sudo has
// root's environment without the terminal's mark; it belongs to the
// terminal's session, and ends with it.
func TestTerminalCloseEndsSudoProcesses(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.RequireImage(t, apitest.DebianImage)
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	c := createSandbox(t, e, u.Token, templateNamed(t, e, "Debian"))
	tc := dialSized(t, e, c.ID, u.Token, 80, 24)
	tc.send("sudo sleep 1234 & sudo env -i /bin/sleep 1235 & echo started-$((40+2))\n")
	tc.waitFor("started-42")
	// Both sleeps themselves, not only their sudo, so the close does not race sudo's start.
	started := func() bool {
		out := execOut(t, e, u.ID, c.ID, "ps -eo args")
		return regexp.MustCompile(`(?m)^sleep 1234$`).MatchString(out) && regexp.MustCompile(`(?m)^/bin/sleep 1235$`).MatchString(out)
	}
	eventually(t, 6*time.Second, "the sudo sleeps to start", started)
	tc.conn.Close(websocket.StatusNormalClosure, "bye")
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
		tc := dialSized(t, e, c.ID, u.Token, 80, 24)
		tc.send("echo up-$((40+2)); sleep 1000\n")
		tc.waitFor("up-42")
		tc.conn.Close(websocket.StatusNormalClosure, "bye")
		waitTerminalsClosed(t, e)
	}
	tc := dialSized(t, e, c.ID, u.Token, 80, 24)
	tc.send("echo alive-$((2+3))\n")
	tc.waitFor("alive-5")
}

// TestTimedOutScriptLeavesNothing: a check that times out as the learner is
// ended with what it started in the background (BusyBox's timeout kills only
// its child, and root cannot see a learner's processes' marks).
func TestTimedOutScriptLeavesNothing(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	c := createSandbox(t, e, u.Token, busyboxTemplate(t, e))
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
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	c := createSandbox(t, e, u.Token, busyboxTemplate(t, e))
	tc := dialSized(t, e, c.ID, u.Token, 80, 24)
	for i := range 5000 {
		tc.control(map[string]any{"type": "resize", "cols": 20 + i%900, "rows": 10 + i%500})
	}
	tc.control(map[string]any{"type": "resize", "cols": 123, "rows": 45})
	// Input waits for the resizes sent before it: the first stty sees the last size.
	tc.out.Reset()
	tc.send("echo size=$(stty size)=\n")
	if got := tc.waitForMatch(regexp.MustCompile(`size=([0-9]+ [0-9]+)=`)); got != "45 123" {
		t.Fatalf("the terminal is at %s after the flood, want 45 123", got)
	}
	tc.send("echo still-$((6*7))\n")
	tc.waitFor("still-42")
}

// ending is how a terminal ended: the last error control message and the
// close frame's code and reason.
type ending struct {
	errMsg map[string]any
	code   websocket.StatusCode
	reason string
}

// readToClose reads until the socket closes and says how.
func (tc *termClient) readToClose() ending {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // only guards against a hung test
	defer cancel()
	var end ending
	for {
		mt, data, err := tc.conn.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				tc.t.Fatalf("the terminal did not close: %v; control %v", err, tc.ctl)
			}
			end.code, end.reason = ce.Code, ce.Reason
			return end
		}
		if mt == websocket.MessageBinary {
			tc.out.Write(data)
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			tc.t.Fatalf("text frame is not JSON: %q", data)
		}
		tc.ctl = append(tc.ctl, m)
		if m["type"] == "error" {
			end.errMsg = m
		}
	}
}

// expectEnded checks that a terminal ended with an error of status and detail.
func expectEnded(t *testing.T, end ending, status int, detail string) {
	t.Helper()
	if end.errMsg == nil || end.errMsg["status"] != float64(status) || end.errMsg["detail"] != detail {
		t.Fatalf("error message %v, want status %d and detail %q", end.errMsg, status, detail)
	}
	if end.code != websocket.StatusCode(4000+status) || end.reason != detail {
		t.Fatalf("closed with %d %q, want %d %q", end.code, end.reason, 4000+status, detail)
	}
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
		other := dialSized(t, e, createSandbox(t, e, bystander.Token, tpl).ID, bystander.Token, 80, 24)
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
			tc := dialSized(t, e, c.ID, u.Token, 80, 24)
			tc.send("echo ready-$((1+1)); sleep 1000\n") // in the foreground: ash, unlike bash, leaves background jobs to a hang-up
			tc.waitFor("ready-2")
			tt.act(u)
			expectEnded(t, tc.readToClose(), tt.status, tt.detail)
			if tt.name != "deleted" { // a deleted user's sandboxes go with the rows
				waitTerminalsOfSandboxClosed(t, e, 1)
				if out := execOut(t, e, u.ID, c.ID, "ps -o args"); strings.Contains(out, "sleep 1000") {
					t.Fatalf("%s: the terminal's processes survive:\n%s", tt.name, out)
				}
			}
		}
		other.send("echo still-$((6*7))\n")
		other.waitFor("still-42")
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
	tc := dialSized(t, e, createSandbox(t, e, u.Token, busyboxTemplate(t, e)).ID, u.Token, 80, 24)
	tc.send("echo ready-$((1+1))\n")
	tc.waitFor("ready-2")
	if _, err := e.DB.Users().UpdateUser(context.Background(), u.ID, func(u *auth.User, _ int) error { u.IsActive = false; return nil }); err != nil {
		t.Fatal(err)
	}
	expectEnded(t, tc.readToClose(), 403, "User account is inactive")
}

// TestShutdownEndsTerminals: stopping the server ends every terminal with a
// reason and kills their processes before Serve returns.
func TestShutdownEndsTerminals(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	c := createSandbox(t, e, u.Token, busyboxTemplate(t, e))
	// The same application served by App.Serve, as tuxlab serve runs it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- e.App.Serve(ctx, ln, 30*time.Second) }()
	dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(dctx, fmt.Sprintf("ws://%s/ws/terminal/%d?token=%s", ln.Addr(), c.ID, u.Token), nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := &termClient{t: t, conn: conn}
	t.Cleanup(func() { conn.CloseNow() })
	tc.send("echo ready-$((1+1)); sleep 1000\n") // in the foreground: ash, unlike bash, leaves background jobs to a hang-up
	tc.waitFor("ready-2")
	stop()
	end := tc.readToClose()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	expectEnded(t, end, 503, "The server is shutting down: open the terminal again in a moment")
	if out := execOut(t, e, u.ID, c.ID, "ps -o args"); strings.Contains(out, "sleep 1000") {
		t.Fatalf("the terminal's processes survive the shutdown:\n%s", out)
	}
}

// refusedTerminal opens a WebSocket to a terminal that must be refused: the
// upgrade succeeds, and the socket tells why and closes.
func refusedTerminal(t *testing.T, e *apitest.Env, query string, header http.Header) ending {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.URL, "http")+"/ws/terminal/"+query, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatalf("a refused terminal must still be upgraded, to tell why: %v (%v)", err, resp)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return (&termClient{t: t, conn: conn}).readToClose()
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
	e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/containers/%d/stop", stopped.ID), Token: owner.Token}).Expect(t, 200)
	busy := createSandbox(t, e, other.Token, tpl)
	taken := dialSized(t, e, busy.ID, other.Token, 80, 24) // its one place
	taken.send("echo taken-$((1+1))\n")
	taken.waitFor("taken-2")
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
			expectEnded(t, refusedTerminal(t, e, tt.query, tt.header), tt.status, tt.detail)
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
		tc := dialSized(t, e, running.ID, owner.Token, 80, 24)
		tc.send("echo open-$((1+1))\n")
		tc.waitFor("open-2")
	})
	t.Run("shutting down", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.App.Terminals.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		query := fmt.Sprintf("%d?token=%s", running.ID, owner.Token)
		expectEnded(t, refusedTerminal(t, e, query, nil), 503, "The server is shutting down: open the terminal again in a moment")
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
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	c := createSandbox(t, e, u.Token, busyboxTemplate(t, e))
	sizeRe := regexp.MustCompile(`size=([0-9]+ [0-9]+)=`)
	for range 20 {
		tc := dialSized(t, e, c.ID, u.Token, 132, 43)
		tc.control(map[string]any{"type": "resize", "cols": 100, "rows": 33})
		tc.send("echo size=$(stty size)=\n")
		if got := tc.waitForMatch(sizeRe); got != "33 100" {
			t.Fatalf("the terminal is at %s, want the 33 100 asked for as it opened", got)
		}
		tc.conn.Close(websocket.StatusNormalClosure, "")
		waitTerminalsClosed(t, e)
	}
}
