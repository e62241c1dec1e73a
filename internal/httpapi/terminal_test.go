package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
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
