package httpapi_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/share"
	"tuxlab/internal/store/storetest"
)

// guestPreview asks for the preview at base with share token shareToken as
// the user of access, and returns the ticketed URL it is redirected to.
func guestPreview(t *testing.T, e *apitest.Env, base, shareToken, access string) string {
	t.Helper()
	res, body := previewGet(t, e, base+"?"+url.Values{"share": {shareToken}}.Encode(), http.Header{"Authorization": {"Bearer " + access}})
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusFound || !strings.HasPrefix(loc, base+"~") {
		t.Fatalf("a guest with a share's token: %d, Location %q, %s", res.StatusCode, loc, body)
	}
	if strings.Contains(loc, shareToken) {
		t.Fatalf("the share's token stays in the ticketed URL %q", loc)
	}
	return loc
}

// expectPreview checks that path answers status, and the page when 200.
func expectPreview(t *testing.T, e *apitest.Env, path string, header http.Header, status int, want string) {
	t.Helper()
	res, body := previewGet(t, e, path, header)
	if res.StatusCode != status || !strings.Contains(body, want) {
		t.Fatalf("%d %s, want %d with %q", res.StatusCode, body, status, want)
	}
}

// TestGuestPreview: a signed-in guest holding a live share's token previews
// the shared sandbox's port (read share: looking is not typing); nobody
// without the token does, nor with another sandbox's token; the port-forward
// stays the owner's; ending the share refuses the guest's ticketed URL at
// once (the ticket is still genuine for an hour).
func TestGuestPreview(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.CreateUser("learner", auth.RoleStudent)
		guest := e.CreateUser("teacher", auth.RoleStudent)
		other := e.CreateUser("other", auth.RoleStudent)
		c := createSandbox(t, e, owner.Token, busyboxTemplate(t, e))
		serveInSandbox(t, e, owner.ID, c.ID, 8080, `mkdir -p /tmp/www && echo '<h1>hello guest</h1>' > /tmp/www/index.html &&
/.tuxlab/bin/httpd -p 8080 -h /tmp/www`)
		base := fmt.Sprintf("/preview/%d/8080/", c.ID)
		sh := shareSandbox(t, e, owner.Token, c.ID, nil) // read-only

		// The guest: redirected to a ticketed prefix of their own, whose
		// page answers without any credential (the page's own requests)
		// and in the guest's browser; the token does not reach the service.
		loc := guestPreview(t, e, base, sh.Token, guest.Token)
		expectPreview(t, e, loc, http.Header{"Origin": {"null"}}, 200, "hello guest")
		expectPreview(t, e, loc, http.Header{"Cookie": {"tuxlab_session=" + guest.Token}}, 200, "hello guest")
		// The owner is the owner, whatever the query says (it passes to
		// the service as it is).
		res, _ := previewGet(t, e, base+"?share=not-a-token", http.Header{"Authorization": {"Bearer " + owner.Token}})
		if res.StatusCode != http.StatusFound || !strings.HasSuffix(res.Header.Get("Location"), "/?share=not-a-token") {
			t.Fatalf("the owner with a query of their own: %d, Location %q", res.StatusCode, res.Header.Get("Location"))
		}
		res, _ = previewGet(t, e, base+"?share="+sh.Token, http.Header{"Authorization": {"Bearer " + owner.Token}})
		ownLoc := res.Header.Get("Location")
		if res.StatusCode != http.StatusFound || !strings.HasPrefix(ownLoc, base+"~") {
			t.Fatalf("the owner with their own share's token: %d, Location %q", res.StatusCode, ownLoc)
		}
		expectPreview(t, e, ownLoc, nil, 200, "hello guest")

		// Without the token, the guest is anyone else: 404; so is another
		// learner, and the guest's link in another learner's browser.
		if r := e.Get(base, guest.Token).Expect(t, 404); r.Detail() != "Container not found" {
			t.Fatal(r.Detail())
		}
		e.Get(base, other.Token).Expect(t, 404)
		expectPreview(t, e, loc, http.Header{"Cookie": {"tuxlab_session=" + other.Token}}, 404, "Container not found")
		// A token of another sandbox's share opens nothing here.
		oc := createSandbox(t, e, other.Token, busyboxTemplate(t, e))
		elsewhere := shareSandbox(t, e, other.Token, oc.ID, nil)
		if r := e.Get(base+"?share="+elsewhere.Token, guest.Token).Expect(t, 404); r.Detail() != "Container not found" {
			t.Fatal(r.Detail())
		}
		if r := e.Get(base+"?share=not-a-token", guest.Token).Expect(t, 404); r.Detail() != share.ErrLinkNotFound.Detail {
			t.Fatal(r.Detail())
		}
		// A guest must be signed in.
		e.Get(base+"?share="+sh.Token, "").Expect(t, 401)
		// The port-forward stays the owner's: a raw pipe is more than a look.
		e.DialTerminal(t, fmt.Sprintf("/ws/containers/%d/port/8080?", c.ID)+url.Values{"token": {guest.Token}, "share": {sh.Token}}.Encode(), nil).
			ExpectClosed(404, "Container not found")

		// Ending the share refuses the guest's ticketed URL at once, and
		// the token; the owner's own ticket still opens the page.
		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/containers/%d/shares/%d", c.ID, sh.ID), Token: owner.Token}).Expect(t, http.StatusOK)
		expectPreview(t, e, loc, nil, 404, share.ErrLinkNotFound.Detail)
		expectPreview(t, e, loc, http.Header{"Cookie": {"tuxlab_session=" + guest.Token}}, 404, share.ErrLinkNotFound.Detail)
		e.Get(base+"?share="+sh.Token, guest.Token).Expect(t, 404)
		expectPreview(t, e, ownLoc, nil, 200, "hello guest")
	})
}

// TestGuestPreviewExpires: when the share expires, its guest's ticketed
// URL is refused at once, though the ticket itself is good for an hour.
func TestGuestPreviewExpires(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			clock := newClock()
			e := apitest.New(t, eng, withClock(clock))
			owner := e.CreateUser("learner", auth.RoleStudent)
			guest := e.CreateUser("teacher", auth.RoleStudent)
			c := createSandbox(t, e, owner.Token, busyboxTemplate(t, e))
			serveInSandbox(t, e, owner.ID, c.ID, 8080, `mkdir -p /tmp/www && echo '<h1>hello guest</h1>' > /tmp/www/index.html &&
/.tuxlab/bin/httpd -p 8080 -h /tmp/www`)
			base := fmt.Sprintf("/preview/%d/8080/", c.ID)
			sh := shareSandbox(t, e, owner.Token, c.ID, map[string]any{"minutes": 1})
			loc := guestPreview(t, e, base, sh.Token, guest.Token)
			expectPreview(t, e, loc, nil, 200, "hello guest")

			clock.advance(2 * time.Minute)
			expectPreview(t, e, loc, nil, 404, share.ErrLinkNotFound.Detail)
			e.Get(base+"?share="+sh.Token, guest.Token).Expect(t, 404)
		})
	}
}

// TestGuestPreviewCutWhenTheShareEnds: a connection the guest holds open
// through the preview (a protocol switch, then an echo) is closed by the
// server when the owner ends the share, not left to the relay's hour.
func TestGuestPreviewCutWhenTheShareEnds(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.CreateUser("learner", auth.RoleStudent)
		guest := e.CreateUser("teacher", auth.RoleStudent)
		c := createSandbox(t, e, owner.Token, busyboxTemplate(t, e))
		serveInSandbox(t, e, owner.ID, c.ID, 8083, `cat >/tmp/ws.sh <<'SH'
#!/.tuxlab/bin/sh
while IFS= read -r l; do l=${l%$(printf '\r')}; [ -z "$l" ] && break; done
printf 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n'
exec /.tuxlab/bin/cat
SH
chmod +x /tmp/ws.sh
/.tuxlab/bin/sh -c '/.tuxlab/bin/nc -l -p 8083 -e /tmp/ws.sh' >/dev/null 2>&1 </dev/null &`)
		sh := shareSandbox(t, e, owner.Token, c.ID, nil)
		loc := guestPreview(t, e, fmt.Sprintf("/preview/%d/8083/", c.ID), sh.Token, guest.Token)
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET %ssocket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", loc)
		br := bufio.NewReader(conn)
		up, err := http.ReadResponse(br, nil)
		if err != nil || up.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("the guest's upgrade: %v %v", up, err)
		}
		fmt.Fprint(conn, "ping\n")
		if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
			t.Fatalf("echo %q, %v", line, err)
		}

		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/containers/%d/shares/%d", c.ID, sh.ID), Token: owner.Token}).Expect(t, http.StatusOK)
		// The server closes the connection; the deadline only keeps a
		// failing test from hanging (the relay would live an hour).
		conn.SetReadDeadline(time.Now().Add(apitest.TerminalWait))
		rest, err := io.ReadAll(br)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the guest's connection through the preview is still open after the share ended (read %q)", rest)
		}
	})
}
