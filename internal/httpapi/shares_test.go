package httpapi_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/share"
	"tuxlab/internal/store/storetest"
	"tuxlab/internal/terminal"
)

type shareBody struct {
	ID        int64              `json:"id"`
	Mode      string             `json:"mode"`
	Typing    bool               `json:"typing"`
	ExpiresAt string             `json:"expires_at"`
	Watchers  []terminal.Watcher `json:"watchers"`
	Token     string             `json:"token"`
	Link      string             `json:"link"`
}

// shareSandbox shares sandbox id's terminal as token's user with body.
func shareSandbox(t *testing.T, e *apitest.Env, token string, id int64, body any) shareBody {
	t.Helper()
	var sh shareBody
	e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/containers/%d/shares", id), Token: token, Body: body}).
		Expect(t, http.StatusCreated).JSON(t, &sh)
	if sh.Token == "" || sh.Link != "/watch#"+sh.Token {
		t.Fatalf("a share without its token and link: %+v", sh)
	}
	return sh
}

// watch opens the watch socket of share token as the user of access token.
func watch(t *testing.T, e *apitest.Env, shareToken, access string) *apitest.Terminal {
	t.Helper()
	return e.DialTerminal(t, "/ws/watch?"+url.Values{"share": {shareToken}, "token": {access}}.Encode(), nil)
}

// expectNormalClose waits until the server has closed tm normally with reason.
func expectNormalClose(t *testing.T, tm *apitest.Terminal, reason string) {
	t.Helper()
	var ce websocket.CloseError
	if err := tm.Ended(apitest.TerminalWait); !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure || ce.Reason != reason {
		t.Fatalf("the guest's socket ended with %v, want 1000 %q", err, reason)
	}
}

// sawWatchers reports whether the owner's socket was last told that names
// watch (in any order).
func sawWatchers(tm *apitest.Terminal, names ...string) bool {
	var last map[string]any
	for _, m := range tm.Control() {
		if m["type"] == "watchers" {
			last = m
		}
	}
	if last == nil {
		return false
	}
	ws, ok := last["watchers"].([]any)
	if !ok {
		return false // the list is always there, empty when nobody watches
	}
	if len(ws) != len(names) {
		return false
	}
	seen := map[string]bool{}
	for _, w := range ws {
		seen[w.(map[string]any)["name"].(string)] = true
	}
	for _, n := range names {
		if !seen[n] {
			return false
		}
	}
	return true
}

// TestShareTerminal: a guest with a share's link watches the owner's
// terminal (what was printed before, then live); in a read share what the
// guest types is refused; in a write share it reaches the shell once the
// owner allows typing; the owner is told who watches; ending the share
// closes the guest's socket at once and the link stops working; nobody else
// can create, list, change or end the owner's shares.
func TestShareTerminal(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.CreateUser("learner", auth.RoleStudent)
		guest := e.CreateUser("teacher", auth.RoleStudent)
		other := e.CreateUser("other", auth.RoleStudent)
		c := createSandbox(t, e, owner.Token, templateNamed(t, e, "BusyBox"))
		shares := fmt.Sprintf("/api/containers/%d/shares", c.ID)

		read := shareSandbox(t, e, owner.Token, c.ID, nil)
		if read.Mode != "read" || read.Typing {
			t.Fatalf("a share by default is %+v, want read-only", read)
		}

		// Nobody else sees the sandbox's shares, an admin's id included.
		for _, req := range []apitest.Request{
			{Method: "POST", Path: shares, Body: map[string]any{}},
			{Method: "GET", Path: shares},
			{Method: "PATCH", Path: fmt.Sprintf("%s/%d", shares, read.ID), Body: map[string]any{"typing": false}},
			{Method: "DELETE", Path: fmt.Sprintf("%s/%d", shares, read.ID)},
		} {
			req.Token = other.Token
			e.Do(req).Expect(t, http.StatusNotFound)
		}
		e.Do(apitest.Request{Method: "POST", Path: shares, Token: owner.Token, Body: map[string]any{"minutes": 0, "mode": "all"}}).
			Expect(t, http.StatusUnprocessableEntity)

		// No terminal open yet: nothing to watch.
		watch(t, e, read.Token, guest.Token).ExpectClosed(http.StatusConflict, terminal.ErrNoTerminal.Detail)

		own := e.OpenTerminal(t, c.TerminalURL, owner.Token, 80, 24)
		own.Exchange("echo before-$((6*7))\n", "before-42")
		g := watch(t, e, read.Token, guest.Token)
		// The guest is told the sandbox's id, for its preview.
		if m := g.AwaitControl("watching", apitest.TerminalWait); m["owner"] != "learner" || m["typing"] != false || m["container_id"] != float64(c.ID) {
			t.Fatalf("the guest was told %v", m)
		}
		g.AwaitText("before-42", 0) // the output kept
		eventually(t, apitest.TerminalWait, "the owner to see the guest", func() bool { return sawWatchers(own, "teacher") })
		own.Type("echo live-$((6*7))\n")
		g.AwaitText("live-42", 0) // the live output

		var listed []shareBody
		e.Get(shares, owner.Token).Expect(t, http.StatusOK).JSON(t, &listed)
		if len(listed) != 1 || listed[0].ID != read.ID || len(listed[0].Watchers) != 1 || listed[0].Watchers[0].Name != "teacher" || listed[0].Token != "" {
			t.Fatalf("the shares listed are %+v", listed)
		}

		// A read share: the guest's input never reaches the shell.
		g.Type("echo guest-$((6*7))\n")
		if m := g.AwaitControl("error", apitest.TerminalWait); !strings.Contains(m["detail"].(string), "Read-only") {
			t.Fatalf("the guest's input was answered %v", m)
		}
		from := len(own.Output())
		own.Exchange("echo after-$((6*7))\n", "after-42")
		if strings.Contains(own.Output(), "guest-42") {
			t.Fatalf("a read-only guest typed into the shell: %s", own.Text(from))
		}
		e.Do(apitest.Request{Method: "PATCH", Path: fmt.Sprintf("%s/%d", shares, read.ID), Token: owner.Token, Body: map[string]any{"typing": true}}).
			Expect(t, http.StatusUnprocessableEntity)
		g.SendControl(map[string]any{"type": "resize", "cols": 20, "rows": 5}) // ignored: the owner's size rules
		own.Exchange("stty size\n", "24 80")

		// A write share: typing once the owner allows it.
		write := shareSandbox(t, e, owner.Token, c.ID, map[string]any{"mode": "write", "minutes": 5})
		w := watch(t, e, write.Token, guest.Token)
		w.AwaitControl("watching", apitest.TerminalWait)
		w.Type("echo early-$((6*7))\n")
		w.AwaitControl("error", apitest.TerminalWait)
		var patched shareBody
		e.Do(apitest.Request{Method: "PATCH", Path: fmt.Sprintf("%s/%d", shares, write.ID), Token: owner.Token, Body: map[string]any{"typing": true}}).
			Expect(t, http.StatusOK).JSON(t, &patched)
		if !patched.Typing {
			t.Fatalf("the share after allowing typing: %+v", patched)
		}
		if m := w.AwaitControl("typing", apitest.TerminalWait); m["typing"] != true {
			t.Fatalf("the guest was told %v", m)
		}
		w.Type("echo typed-$((6*7))\n")
		own.AwaitText("typed-42", 0)
		if strings.Contains(own.Output(), "early-42") {
			t.Fatal("what the guest typed before typing was allowed reached the shell")
		}

		// At most terminal.MaxWatchersPerShare guests per share.
		var more []*apitest.Terminal
		for range terminal.MaxWatchersPerShare - 1 {
			m := watch(t, e, write.Token, other.Token)
			m.AwaitControl("watching", apitest.TerminalWait)
			more = append(more, m)
		}
		watch(t, e, write.Token, other.Token).ExpectClosed(http.StatusConflict, terminal.ErrTooManyWatchers.Detail)
		for _, m := range more {
			m.Hangup()
		}

		// Ending the read share closes its guest at once; the link is dead.
		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("%s/%d", shares, read.ID), Token: owner.Token}).Expect(t, http.StatusOK)
		expectNormalClose(t, g, "Sharing ended by the owner")
		eventually(t, apitest.TerminalWait, "the owner to see the guest of the write share only", func() bool { return sawWatchers(own, "teacher") })
		watch(t, e, read.Token, guest.Token).ExpectClosed(http.StatusNotFound, share.ErrLinkNotFound.Detail)
		watch(t, e, "not-a-token", guest.Token).ExpectClosed(http.StatusNotFound, share.ErrLinkNotFound.Detail)
		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("%s/%d", shares, read.ID), Token: owner.Token}).Expect(t, http.StatusNotFound)

		// The guest watches only while signed in.
		e.Do(apitest.Request{Method: "GET", Path: "/ws/watch?share=" + write.Token}).Expect(t, http.StatusUnauthorized)
		// A guest who leaves is gone from the owner's list, empty now.
		w.SendControl(map[string]any{"type": "close"})
		w.Ended(apitest.TerminalWait)
		eventually(t, apitest.TerminalWait, "the owner to see nobody watching", func() bool { return sawWatchers(own) })

		// The terminal's end closes its guests.
		last := watch(t, e, write.Token, guest.Token)
		last.AwaitControl("watching", apitest.TerminalWait)
		own.Hangup()
		expectNormalClose(t, last, "The terminal ended")
	})
}

// TestShareLimitsAndExpiry: a sandbox has at most share.MaxPerSandbox live
// shares; an expired share's link is refused (4404) and it leaves the list.
func TestShareLimitsAndExpiry(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			clock := newClock()
			e := apitest.New(t, eng, withClock(clock))
			owner := e.CreateUser("learner", auth.RoleStudent)
			guest := e.CreateUser("teacher", auth.RoleStudent)
			c := createSandbox(t, e, owner.Token, templateNamed(t, e, "BusyBox"))
			shares := fmt.Sprintf("/api/containers/%d/shares", c.ID)
			var short shareBody
			for i := range share.MaxPerSandbox {
				sh := shareSandbox(t, e, owner.Token, c.ID, map[string]any{"minutes": 1 + i*10})
				if i == 0 {
					short = sh
				}
			}
			e.Do(apitest.Request{Method: "POST", Path: shares, Token: owner.Token, Body: map[string]any{}}).Expect(t, http.StatusConflict)

			clock.advance(2 * time.Minute)
			watch(t, e, short.Token, guest.Token).ExpectClosed(http.StatusNotFound, share.ErrLinkNotFound.Detail)
			var listed []shareBody
			e.Get(shares, owner.Token).Expect(t, http.StatusOK).JSON(t, &listed)
			if len(listed) != share.MaxPerSandbox-1 {
				t.Fatalf("%d shares listed after one expired, want %d", len(listed), share.MaxPerSandbox-1)
			}
			shareSandbox(t, e, owner.Token, c.ID, nil) // the expired one's place is free
		})
	}
}

// TestShareRefusedInAnExam: an exam is taken alone, so its attempt's sandbox
// cannot be shared (409, saying why), while the learner's other sandbox can.
func TestShareRefusedInAnExam(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		ex := examPracticalFixture(t, e, admin, "slug=alone&title=Alone")
		own := createSandbox(t, e, alice.Token, busyboxTemplate(t, e))
		at := startExam(t, e, alice.Token, ex.ID)
		if at.ContainerID == nil {
			t.Fatalf("the attempt names no sandbox: %+v", at)
		}
		res := e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/containers/%d/shares", *at.ContainerID), Token: alice.Token,
			Body: map[string]any{"mode": "write"}}).Expect(t, http.StatusConflict)
		if res.Detail() != share.ErrInExam.Detail {
			t.Fatalf("refused with %q, want %q", res.Detail(), share.ErrInExam.Detail)
		}
		shareSandbox(t, e, alice.Token, own.ID, nil)
	})
}
