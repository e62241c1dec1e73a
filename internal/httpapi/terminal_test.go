package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
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

// waitTerminalsClosed waits until the server has finished with every terminal
// it had open, processes reaped (a terminal gives its place back last).
func waitTerminalsClosed(t *testing.T, e *apitest.Env) {
	t.Helper()
	for i := 0; e.App.Terminals.Open() > 0; i++ {
		if i == 1500 {
			t.Fatalf("%d terminals still open", e.App.Terminals.Open())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// execOut runs a script as the sandbox's owner and returns its stdout.
func execOut(t *testing.T, e *apitest.Env, userID, id int64, script string) string {
	t.Helper()
	res, err := e.App.Sandboxes.Exec(context.Background(), sandbox.Actor{UserID: userID}, id, sandbox.Script{Text: script})
	if err != nil {
		t.Fatal(err)
	}
	return res.Stdout
}

// TestTerminalCloseEndsItsProcesses: closing the socket ends the shell and
// everything started from it, in the background or in the foreground (on
// Docker 20.10 they all lived on).
func TestTerminalCloseEndsItsProcesses(t *testing.T) {
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	c := createSandbox(t, e, u.Token, busyboxTemplate(t, e))
	tc := dialSized(t, e, c.ID, u.Token, 80, 24)
	tc.send("sleep 1000 & printf 'pid=%s=\\n' $$\n")
	pid := tc.waitForMatch(regexp.MustCompile(`pid=([0-9]+)=`))
	tc.send("sleep 999\n")
	for i := 0; !strings.Contains(execOut(t, e, u.ID, c.ID, "ps -o args"), "sleep 999"); i++ {
		if i == 300 {
			t.Fatal("sleep 999 never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	tc.conn.Close(websocket.StatusNormalClosure, "bye")
	waitTerminalsClosed(t, e)
	out := execOut(t, e, u.ID, c.ID, "ps -o pid,args; test -d /proc/"+pid+" && echo shell-alive")
	if strings.Contains(out, "sleep 1000") || strings.Contains(out, "sleep 999") || strings.Contains(out, "shell-alive") {
		t.Fatalf("processes of the closed terminal (shell %s) survive:\n%s", pid, out)
	}
}

// TestTerminalCyclesKeepThePidLimit: opening and closing terminals, each
// leaving a background process, never exhausts a sandbox's pid limit (it ran
// out after a dozen cycles at this limit).
func TestTerminalCyclesKeepThePidLimit(t *testing.T) {
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
		tc.send("sleep 1000 & echo up-$((40+2))\n")
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
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	c := createSandbox(t, e, u.Token, busyboxTemplate(t, e))
	res, err := e.App.Sandboxes.Exec(context.Background(), sandbox.Actor{UserID: u.ID}, c.ID,
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
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	c := createSandbox(t, e, u.Token, busyboxTemplate(t, e))
	tc := dialSized(t, e, c.ID, u.Token, 80, 24)
	for i := range 5000 {
		tc.control(map[string]any{"type": "resize", "cols": 20 + i%900, "rows": 10 + i%500})
	}
	tc.control(map[string]any{"type": "resize", "cols": 123, "rows": 45})
	sizeRe := regexp.MustCompile(`size=([0-9]+ [0-9]+)=`)
	// Input is not held up behind the resizes, so the last one may land just
	// after a first stty: ask until it has.
	for i := 0; ; i++ {
		tc.out.Reset()
		tc.send("echo size=$(stty size)=\n")
		if got := tc.waitForMatch(sizeRe); got == "45 123" {
			break
		} else if i == 100 {
			t.Fatalf("the terminal stays at %s after the flood, want 45 123", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tc.send("echo still-$((6*7))\n")
	tc.waitFor("still-42")
}
