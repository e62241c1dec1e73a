package httpapi_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/terminal"
)

// shellPid types a line that prints the shell's pid and returns it.
func shellPid(tm *apitest.Terminal) string {
	from := len(tm.Output())
	tm.Type("echo pid=$$=$((6*7))\n")
	return tm.Await(regexp.MustCompile(`pid=([0-9]+)=42`), from, 30*time.Second)[1]
}

// TestTerminalReattach: a socket that drops leaves its shell running; a
// socket that comes back with the session id gets the same shell (its
// variables, its pid, vi still running in it) and the output kept
// meanwhile; a second socket takes the session over from the first, which
// is told so and closed with 4000; a session id of another user, or for
// another sandbox, opens a new shell and takes nothing over.
func TestTerminalReattach(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	busybox := templateNamed(t, e, "BusyBox")
	c := createSandbox(t, e, u.Token, busybox)
	path := c.TerminalURL

	first := e.OpenTerminal(t, path, u.Token, 80, 24)
	sid := first.Session()
	first.Type("X=kept-$((6*7)); echo marker-$((6*7)); echo file-text-$((6*7)) > /tmp/f\n")
	first.Await(regexp.MustCompile(`marker-42`), 0, 30*time.Second)
	pid := shellPid(first)
	from := len(first.Output())
	first.Type("vi /tmp/f\n")
	first.Await(regexp.MustCompile(`file-text-42`), from, 30*time.Second)
	first.Drop()

	// The same shell, vi still in it, and the output replayed.
	second := e.ReopenTerminal(t, path, u.Token, 80, 24, sid)
	if got := second.Session(); got != sid {
		t.Fatalf("reattaching to %s gave session %s", sid, got)
	}
	second.Await(regexp.MustCompile(`marker-42(.|\n)*file-text-42`), 0, 30*time.Second)
	if ps := execOut(t, e, u.ID, c.ID, "ps"); !strings.Contains(ps, "vi /tmp/f") {
		t.Fatalf("vi is gone after the socket dropped:\n%s", ps)
	}
	second.Type(":q!\r")
	eventually(t, 30*time.Second, "vi to quit", func() bool { return !strings.Contains(execOut(t, e, u.ID, c.ID, "ps"), "vi /tmp/f") })
	from = len(second.Output())
	second.Type("echo $X-pid=$$=\n")
	if got := second.Await(regexp.MustCompile(`kept-42-pid=([0-9]+)=`), from, 30*time.Second)[1]; got != pid {
		t.Fatalf("the shell after reattaching is %s, before %s", got, pid)
	}

	// A second tab takes the session over.
	third := e.ReopenTerminal(t, path, u.Token, 80, 24, sid)
	if got := third.Session(); got != sid {
		t.Fatalf("the second tab got session %s, want %s", got, sid)
	}
	if m := second.AwaitControl("detached", 30*time.Second); m["reason"] != "elsewhere" {
		t.Fatalf("the socket taken over was told %v", m)
	}
	if code := websocket.CloseStatus(second.Ended(30 * time.Second)); code != terminal.CloseTakenOver {
		t.Fatalf("the socket taken over closed with %d, want %d", code, terminal.CloseTakenOver)
	}
	if got := shellPid(third); got != pid {
		t.Fatalf("the second tab's shell is %s, want %s", got, pid)
	}

	// Another user's id, or an id for another sandbox: a new shell, and the
	// session keeps its socket.
	other := e.CreateUser("other", auth.RoleStudent)
	oc := createSandbox(t, e, other.Token, busybox)
	mine2 := createSandbox(t, e, u.Token, busybox)
	for _, try := range []struct {
		name, token string
		id          int64
	}{{"another user", other.Token, oc.ID}, {"another sandbox", u.Token, mine2.ID}} {
		tm := e.ReopenTerminal(t, fmt.Sprintf("/ws/terminal/%d", try.id), try.token, 80, 24, sid)
		if got := tm.Session(); got == sid {
			t.Fatalf("%s: attached to session %s", try.name, sid)
		}
		shellPid(tm) // a shell of its own, which answers
		tm.End()
	}
	if got := shellPid(third); got != pid {
		t.Fatalf("the session's shell is %s after foreign ids, want %s", got, pid)
	}
	for _, m := range third.Control() {
		if m["type"] == "detached" {
			t.Fatalf("a foreign id took the session over: %v", third.Control())
		}
	}
}

// TestTerminalCloseMessageHangsUp: the close message (the page's End session
// button) hangs the terminal up at once, grace or not: the foreground job
// and the shell end, what setsid started lives on (BusyBox has no nohup).
func TestTerminalCloseMessageHangsUp(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e, u, c := learnerSandbox(t, "BusyBox", func(c *config.Config) { c.TerminalGrace = time.Hour })
	tm := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
	tm.Session()
	expectHungUp(t, e, u, c, tm, tm.End, "the close message")
}

// expectHungUp starts a foreground job and one under setsid in the shell
// of tm, ends the terminal with end and checks the hang-up that follows
// (after): the job and the shell end, what setsid started lives on.
func expectHungUp(t *testing.T, e *apitest.Env, u *apitest.User, c containerBody, tm *apitest.Terminal, end func(), after string) {
	t.Helper()
	pid := shellPid(tm)
	tm.Type("setsid sleep 1002 >/dev/null 2>&1 &\nsleep 1007\n")
	eventually(t, 30*time.Second, "the sleeps to start", func() bool {
		return strings.Count(execOut(t, e, u.ID, c.ID, "ps"), "sleep 100") >= 2
	})
	end()
	waitTerminalsClosed(t, e)
	out := execOut(t, e, u.ID, c.ID, "ps; test -d /proc/"+pid+" && echo shell-alive; true")
	if !strings.Contains(out, "sleep 1002") {
		t.Errorf("what setsid started did not survive the hang-up:\n%s", out)
	}
	for _, gone := range []string{"sleep 1007", "shell-alive"} {
		if strings.Contains(out, gone) {
			t.Errorf("%s lives on after %s:\n%s", gone, after, out)
		}
	}
}

// TestTerminalGraceEndsInAHangup: a dropped socket's shell that nobody
// reattaches to is hung up once the grace has passed, as a closed one is.
func TestTerminalGraceEndsInAHangup(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e, u, c := learnerSandbox(t, "BusyBox", func(c *config.Config) { c.TerminalGrace = 2 * time.Second })
	path := c.TerminalURL
	tm := e.OpenTerminal(t, path, u.Token, 80, 24)
	sid := tm.Session()
	if g, _ := tm.AwaitControl("session", time.Second)["grace"].(float64); g != 2 {
		t.Fatalf("the session message says a grace of %v s, want 2", g)
	}
	expectHungUp(t, e, u, c, tm, tm.Drop, "the grace")
	// The session is gone: its id now opens a new shell.
	late := e.ReopenTerminal(t, path, u.Token, 80, 24, sid)
	if got := late.Session(); got == sid {
		t.Fatalf("the session %s outlived its grace", sid)
	}
}

// TestDetachedTerminalsEndWithTheUser: logging out ends the user's detached
// terminals too, without waiting for the grace.
func TestDetachedTerminalsEndWithTheUser(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e, u, c := learnerSandbox(t, "BusyBox", func(c *config.Config) { c.TerminalGrace = time.Hour })
	tm := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
	tm.Session()
	shellPid(tm)
	tm.Drop()
	e.Do(apitest.Request{Method: "POST", Path: "/api/auth/logout", Token: u.Token}).Expect(t, 200)
	waitTerminalsClosed(t, e)
}
