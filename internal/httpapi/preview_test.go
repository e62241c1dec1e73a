package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/sandbox"
)

// serveInSandbox runs script as the sandbox's user to start a service in the
// background, then waits (inside the sandbox, with the trusted netstat)
// until something listens on port.
func serveInSandbox(t *testing.T, e *apitest.Env, userID, id int64, port int, script string) {
	t.Helper()
	res := execIn(t, e, userID, id, sandbox.Script{Text: "#!/bin/sh\n" + script + fmt.Sprintf(`
i=0; while [ $i -lt 100 ]; do
  /.tuxlab/bin/netstat -ltn | /.tuxlab/bin/grep -q ':%d ' && exit 0
  /.tuxlab/bin/sleep 0.1; i=$((i+1))
done; echo "nothing listens on %d"; exit 1`, port, port)})
	if !res.OK() {
		t.Fatalf("starting a service on %d: %s", port, res)
	}
}

// noRedirects is a client that shows a redirect instead of following it.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// previewGet sends a GET to the server with header set, without following redirects.
func previewGet(t *testing.T, e *apitest.Env, path string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", e.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

func TestPreview(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.CreateUser("owner", auth.RoleStudent)
		other := e.CreateUser("other", auth.RoleStudent)
		root := e.CreateUser("root", auth.RoleAdmin)
		c := createSandbox(t, e, owner.Token, busyboxTemplate(t, e))
		serveInSandbox(t, e, owner.ID, c.ID, 8080, `mkdir -p /tmp/www && echo '<h1>hello preview</h1>' > /tmp/www/index.html &&
/.tuxlab/bin/httpd -p 8080 -h /tmp/www`)
		base := fmt.Sprintf("/preview/%d/8080/", c.ID)

		// The owner: redirected to the ticketed prefix, then the page.
		res, _ := previewGet(t, e, base+"?a=1", http.Header{"Authorization": {"Bearer " + owner.Token}})
		loc := res.Header.Get("Location")
		if res.StatusCode != http.StatusFound || !strings.HasPrefix(loc, fmt.Sprintf("/preview/%d/8080/~", c.ID)) || !strings.HasSuffix(loc, "/?a=1") {
			t.Fatalf("owner: %d, Location %q", res.StatusCode, loc)
		}
		page := e.Get(base, owner.Token).Expect(t, 200)
		if !strings.Contains(string(page.Body), "hello preview") {
			t.Fatalf("owner's preview: %s", page.Body)
		}
		if csp := page.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox ") || strings.Contains(csp, "allow-same-origin") {
			t.Fatalf("CSP %q: the page must run in an opaque origin", csp)
		}
		// The page's own requests carry no credential but the ticket.
		res, body := previewGet(t, e, loc, http.Header{"Origin": {"null"}})
		if res.StatusCode != 200 || !strings.Contains(body, "hello preview") {
			t.Fatalf("ticketed URL without a session: %d %s", res.StatusCode, body)
		}
		// Its origin is opaque: it may read its own answers (CORS, no credentials).
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Fatalf("Access-Control-Allow-Origin %q", got)
		}
		pre := e.Do(apitest.Request{Method: "OPTIONS", Path: loc, Header: http.Header{"Origin": {"null"},
			"Access-Control-Request-Method": {"PUT"}, "Access-Control-Request-Headers": {"content-type"}}}).Expect(t, 204)
		if pre.Header.Get("Access-Control-Allow-Methods") != "PUT" || pre.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("preflight %v", pre.Header)
		}

		// Another learner: 404, with their token and with the owner's
		// ticketed link in a browser signed in as them.
		if r := e.Get(base, other.Token).Expect(t, 404); r.Detail() != "Container not found" {
			t.Fatal(r.Detail())
		}
		// An admin too (no ticket either): the preview is the owner's view,
		// not a management tool.
		if res, _ := previewGet(t, e, base, http.Header{"Authorization": {"Bearer " + root.Token}}); res.StatusCode != 404 {
			t.Fatalf("admin: %d %s", res.StatusCode, res.Header.Get("Location"))
		}
		res, body = previewGet(t, e, loc, http.Header{"Cookie": {"tuxlab_session=" + other.Token}})
		if res.StatusCode != 404 || strings.Contains(body, "hello preview") {
			t.Fatalf("other learner with the owner's link: %d %s", res.StatusCode, body)
		}
		// Anonymous: 401; a forged or foreign ticket opens nothing.
		e.Get(base, "").Expect(t, 401)
		forged := strings.Replace(loc, "/~", "/~1", 1)
		if res, _ = previewGet(t, e, forged, nil); res.StatusCode != 401 {
			t.Fatalf("forged ticket: %d", res.StatusCode)
		}
		otherPort := strings.Replace(loc, "/8080/", "/8081/", 1)
		if res, _ = previewGet(t, e, otherPort, nil); res.StatusCode != 401 {
			t.Fatalf("a ticket for another port: %d", res.StatusCode)
		}
		// Bad ports.
		for _, p := range []string{"0", "65536", "http"} {
			e.Get(fmt.Sprintf("/preview/%d/%s/", c.ID, p), owner.Token).Expect(t, 422)
		}
		// Nothing listening: 502.
		if r := e.Get(fmt.Sprintf("/preview/%d/9/", c.ID), owner.Token).Expect(t, 502); !strings.Contains(r.Detail(), "Nothing answered on port 9") {
			t.Fatal(r.Detail())
		}
		// Every relay has ended with its connection (the trusted timeout's
		// watcher notices within a second): none is left in the sandbox.
		left := execIn(t, e, owner.ID, c.ID, sandbox.Script{Text: `relays() { /.tuxlab/bin/ps -o pid,args | /.tuxlab/bin/grep '[n]c 127'; }
i=0; while relays >/dev/null && [ $i -lt 100 ]; do /.tuxlab/bin/sleep 0.1; i=$((i+1)); done
relays || true`})
		if strings.TrimSpace(left.Stdout) != "" {
			t.Fatalf("relays left running in the sandbox:\n%s", left.Stdout)
		}
	})
}

func TestPreviewKeepsTuxlabCredentialsAndRewritesTheAnswer(t *testing.T) {
	t.Parallel()
	e, u, c := learnerSandbox(t, "BusyBox")
	// A one-shot service that records the request it gets (its head), then answers.
	serveInSandbox(t, e, u.ID, c.ID, 8081, `cat >/tmp/srv.sh <<'SH'
#!/.tuxlab/bin/sh
while IFS= read -r l; do printf '%s\n' "$l" >>/tmp/request; l=${l%$(printf '\r')}; [ -z "$l" ] && break; done
printf 'HTTP/1.1 302 Found\r\nLocation: /next\r\nSet-Cookie: app=1; Path=/x; Domain=example.net\r\nSet-Cookie: tuxlab_session=evil; Path=/\r\nStrict-Transport-Security: max-age=999\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok'
SH
chmod +x /tmp/srv.sh
/.tuxlab/bin/sh -c '/.tuxlab/bin/nc -l -p 8081 -e /tmp/srv.sh' >/dev/null 2>&1 </dev/null &`)
	res, _ := previewGet(t, e, fmt.Sprintf("/preview/%d/8081/", c.ID), http.Header{"Authorization": {"Bearer " + u.Token}})
	prefix := strings.TrimSuffix(res.Header.Get("Location"), "/")
	res, body := previewGet(t, e, prefix+"/sub/path?q=1", http.Header{
		"Cookie":       {"tuxlab_session=" + u.Token + "; app=1; tuxlab_csrf=proof"},
		"X-Csrf-Token": {"proof"},
	})
	if res.StatusCode != 302 || body != "ok" {
		t.Fatalf("%d %q", res.StatusCode, body)
	}
	if got := res.Header.Get("Location"); got != prefix+"/next" {
		t.Fatalf("Location %q, want %q", got, prefix+"/next")
	}
	if got := res.Header.Values("Set-Cookie"); len(got) != 1 || got[0] != "app=1; Path="+prefix+"/x" {
		t.Fatalf("Set-Cookie %q", got)
	}
	if res.Header.Get("Strict-Transport-Security") != "" {
		t.Fatal("the service's HSTS would act on tuxlab's origin")
	}
	got := execIn(t, e, u.ID, c.ID, sandbox.Script{Text: "cat /tmp/request"}).Stdout
	if !strings.HasPrefix(got, "GET /sub/path?q=1 HTTP/1.1\r\n") || !strings.Contains(got, "Cookie: app=1\r\n") {
		t.Fatalf("the service got:\n%s", got)
	}
	for _, secret := range []string{u.Token, "tuxlab_", "proof", "Authorization"} {
		if strings.Contains(got, secret) {
			t.Fatalf("%q reached the sandbox:\n%s", secret, got)
		}
	}
}

func TestPreviewUpgrades(t *testing.T) {
	t.Parallel()
	e, u, c := learnerSandbox(t, "BusyBox")
	// A service that switches protocols and then echoes.
	serveInSandbox(t, e, u.ID, c.ID, 8082, `cat >/tmp/ws.sh <<'SH'
#!/.tuxlab/bin/sh
while IFS= read -r l; do l=${l%$(printf '\r')}; [ -z "$l" ] && break; done
printf 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n'
exec /.tuxlab/bin/cat
SH
chmod +x /tmp/ws.sh
/.tuxlab/bin/sh -c '/.tuxlab/bin/nc -l -p 8082 -e /tmp/ws.sh' >/dev/null 2>&1 </dev/null &`)
	res, _ := previewGet(t, e, fmt.Sprintf("/preview/%d/8082/", c.ID), http.Header{"Authorization": {"Bearer " + u.Token}})
	path := res.Header.Get("Location") + "socket"
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", path)
	br := bufio.NewReader(conn)
	up, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if up.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %d", up.StatusCode)
	}
	fmt.Fprint(conn, "ping through the preview\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "ping through the preview\n" {
		t.Fatalf("echo %q, %v", line, err)
	}
}

func TestPortForwardRoute(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.CreateUser("owner", auth.RoleStudent)
		other := e.CreateUser("other", auth.RoleStudent)
		c := createSandbox(t, e, owner.Token, busyboxTemplate(t, e))
		serveInSandbox(t, e, owner.ID, c.ID, 7000, `/.tuxlab/bin/sh -c '/.tuxlab/bin/nc -ll -p 7000 -e /.tuxlab/bin/cat' >/dev/null 2>&1 </dev/null &`)
		path := fmt.Sprintf("/ws/containers/%d/port/7000", c.ID)

		ws := e.DialTerminal(t, path+"?token="+owner.Token, nil)
		ws.Type("echo me\n")
		ws.AwaitText("echo me\n", 0)
		ws.End()
		// The client went first: the relay sees its input end and goes.
		left := execIn(t, e, owner.ID, c.ID, sandbox.Script{Text: `relays() { /.tuxlab/bin/ps -o pid,args | /.tuxlab/bin/grep '[n]c 127'; }
i=0; while relays >/dev/null && [ $i -lt 100 ]; do /.tuxlab/bin/sleep 0.1; i=$((i+1)); done
relays || true`})
		if strings.TrimSpace(left.Stdout) != "" {
			t.Fatalf("relays left running in the sandbox:\n%s", left.Stdout)
		}

		e.DialTerminal(t, path+"?token="+other.Token, nil).ExpectClosed(404, "Container not found")
		e.DialTerminal(t, path, nil).ExpectClosed(401, "Not authenticated")
		e.DialTerminal(t, fmt.Sprintf("/ws/containers/%d/port/0?token=%s", c.ID, owner.Token), nil).ExpectClosed(422, "port: Input should be a TCP port from 1 to 65535")
		e.Get(path, owner.Token).Expect(t, 426)
		e.Get(path, other.Token).Expect(t, 404)
	})
}
