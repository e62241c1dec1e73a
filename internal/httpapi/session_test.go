package httpapi_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
)

// listedOrigin is named in TUXLAB_CORS_ORIGINS beside "*" in these tests:
// the cookie works from it, and not from any other site "*" lets in.
const listedOrigin = "https://learn.tuxlab.org"

func withListedOrigins(c *config.Config) { c.CORSOrigins = []string{listedOrigin, "*"} }

// browserSession is what a login with X-Tuxlab-Session: cookie gave.
type browserSession struct {
	token   string // the access token of the body
	session *http.Cookie
	csrf    *http.Cookie
}

// cookies returns the Cookie header a browser would send with the session.
func (b browserSession) cookies() string {
	return b.session.Name + "=" + b.session.Value + "; " + b.csrf.Name + "=" + b.csrf.Value
}

// header returns a browser's headers for a request of this site's page:
// the cookies, the Origin, and the CSRF proof when csrf.
func (b browserSession) header(origin string, csrf bool) http.Header {
	h := http.Header{"Cookie": {b.cookies()}}
	if origin != "" {
		h.Set("Origin", origin)
	}
	if csrf {
		h.Set("X-CSRF-Token", b.csrf.Value)
	}
	return h
}

// setCookies returns the cookies a response sets, by name.
func setCookies(r *apitest.Response) map[string]*http.Cookie {
	out := map[string]*http.Cookie{}
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		out[c.Name] = c
	}
	return out
}

// signInBrowser logs u in as the web interface does and checks the cookies.
func signInBrowser(t *testing.T, e *apitest.Env, username string) browserSession {
	t.Helper()
	r := e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login", Header: http.Header{"X-Tuxlab-Session": {"cookie"}, "Origin": {e.URL}},
		Body: map[string]string{"username": username, "password": apitest.Password}}).Expect(t, 200)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	r.JSON(t, &tok)
	set := setCookies(r)
	b := browserSession{token: tok.AccessToken, session: set["tuxlab_session"], csrf: set["tuxlab_csrf"]}
	if b.session == nil || b.csrf == nil {
		t.Fatalf("login with X-Tuxlab-Session: cookie set %v", r.Header.Values("Set-Cookie"))
	}
	return b
}

// TestSessionCookie: the web interface's session lives in cookies that
// scripts cannot read (the token) or that only this site's pages can send
// back (the CSRF proof); a request with the cookie works from this site's
// pages and is refused from any other; logout clears it and ends it.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		e.CreateUser("alice", auth.RoleStudent)
		b := signInBrowser(t, e, "alice")
		ttl := int(e.Config.TokenTTL.Seconds())
		if c := b.session; c.Value != b.token || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.MaxAge != ttl || c.Secure {
			t.Fatalf("session cookie %+v: want the token, HttpOnly, SameSite=Strict, Path=/, Max-Age=%d, not Secure on http", c, ttl)
		}
		if c := b.csrf; c.Value == "" || c.Value == b.token || c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.MaxAge != ttl {
			t.Fatalf("CSRF cookie %+v: want a proof other than the token, readable, SameSite=Strict, Path=/, Max-Age=%d", c, ttl)
		}

		t.Run("a login without the header sets no cookie", func(t *testing.T) {
			r := e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login", Body: map[string]string{"username": "alice", "password": apitest.Password}}).Expect(t, 200)
			if v := r.Header.Values("Set-Cookie"); len(v) > 0 {
				t.Fatalf("Set-Cookie %v", v)
			}
		})
		t.Run("a login from another site asking for cookies", func(t *testing.T) {
			for _, h := range []http.Header{{"Origin": {"https://evil.example.net"}}, {"Sec-Fetch-Site": {"cross-site"}}} {
				h.Set("X-Tuxlab-Session", "cookie")
				r := e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login", Header: h, Body: map[string]string{"username": "alice", "password": apitest.Password}}).Expect(t, 403)
				if v := r.Header.Values("Set-Cookie"); len(v) > 0 {
					t.Fatalf("Set-Cookie %v", v)
				}
			}
		})
		t.Run("a login asking for something else", func(t *testing.T) {
			r := e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login", Header: http.Header{"X-Tuxlab-Session": {"jar"}},
				Body: map[string]string{"username": "alice", "password": apitest.Password}}).Expect(t, 422)
			if got := strings.Join(locs(t, r), ","); got != "header.X-Tuxlab-Session" {
				t.Fatalf("loc %s", got)
			}
		})

		csrfDetail := "CSRF check failed: send the X-CSRF-Token header with the value of the tuxlab_csrf cookie"
		crossDetail := "Cross-site request refused: the session cookie works only from this site's own pages"
		cases := []struct {
			name         string
			method, path string
			header       http.Header
			status       int
			detail       string
		}{
			{"GET from this site", "GET", "/api/auth/me", b.header(e.URL, false), 200, ""},
			{"GET without Origin (a navigation)", "GET", "/api/auth/me", b.header("", false), 200, ""},
			{"GET from a listed origin", "GET", "/api/auth/me", b.header(listedOrigin, false), 200, ""},
			{"GET from another site", "GET", "/api/auth/me", b.header("https://evil.example.net", false), 403, crossDetail},
			{"GET marked cross-site", "GET", "/api/auth/me", func() http.Header {
				h := b.header("", false)
				h.Set("Sec-Fetch-Site", "cross-site")
				return h
			}(), 403, crossDetail},
			{"DELETE without the CSRF proof", "DELETE", "/api/profile/avatar", b.header(e.URL, false), 403, csrfDetail},
			{"DELETE with a wrong proof", "DELETE", "/api/profile/avatar", func() http.Header {
				h := b.header(e.URL, false)
				h.Set("X-CSRF-Token", b.token)
				return h
			}(), 403, csrfDetail},
			{"DELETE with the proof from another site", "DELETE", "/api/profile/avatar", b.header("https://evil.example.net", true), 403, crossDetail},
			{"DELETE with the proof", "DELETE", "/api/profile/avatar", b.header(e.URL, true), 200, ""},
			{"logout without the proof", "POST", "/api/auth/logout", b.header(e.URL, false), 403, csrfDetail},
			{"a bearer token needs no proof", "DELETE", "/api/profile/avatar", http.Header{"Authorization": {"Bearer " + b.token}, "Origin": {"https://evil.example.net"}}, 200, ""},
			{"a bearer token wins over the cookie", "GET", "/api/auth/me", func() http.Header {
				h := b.header(e.URL, false)
				h.Set("Authorization", "Bearer not-a-token")
				return h
			}(), 401, "Could not validate credentials"},
		}
		for _, tt := range cases {
			r := e.Do(apitest.Request{Method: tt.method, Path: tt.path, Header: tt.header}).Expect(t, tt.status)
			if tt.detail != "" && r.Detail() != tt.detail {
				t.Fatalf("%s: detail %q, want %q", tt.name, r.Detail(), tt.detail)
			}
			if tt.status == 200 && tt.path == "/api/auth/me" {
				var u userBody
				if r.JSON(t, &u); u.Username != "alice" {
					t.Fatalf("%s: %+v", tt.name, u)
				}
			}
		}

		// A second sign-in (another tab signed in again) has its own proof.
		other := signInBrowser(t, e, "alice")
		if other.csrf.Value == b.csrf.Value {
			t.Fatal("two sessions share a CSRF proof")
		}
		h := b.header(e.URL, false)
		h.Set("X-CSRF-Token", other.csrf.Value)
		e.Do(apitest.Request{Method: "DELETE", Path: "/api/profile/avatar", Header: h}).Expect(t, 403)

		// Logout clears the cookies, and the old cookie is dead everywhere.
		r := e.Do(apitest.Request{Method: "POST", Path: "/api/auth/logout", Header: b.header(e.URL, true)}).Expect(t, 200)
		set := setCookies(r)
		for _, name := range []string{"tuxlab_session", "tuxlab_csrf"} {
			if c := set[name]; c == nil || c.MaxAge >= 0 || c.Value != "" || c.Path != "/" {
				t.Fatalf("logout sets %s = %+v, want it cleared (Max-Age=0)", name, c)
			}
		}
		for _, s := range []browserSession{b, other} {
			if r := e.Do(apitest.Request{Method: "GET", Path: "/api/auth/me", Header: s.header(e.URL, false)}).Expect(t, 401); r.Detail() != "Could not validate credentials" {
				t.Fatalf("after logout: %q", r.Detail())
			}
		}
	}, withListedOrigins)
}

// TestSessionCookieFollowsPasswordChange: a password change made through
// the cookie refreshes it, since the old token no longer works.
func TestSessionCookieFollowsPasswordChange(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		e.CreateUser("bob", auth.RoleStudent)
		b := signInBrowser(t, e, "bob")
		r := e.Do(apitest.Request{Method: "PUT", Path: "/api/profile/password", Header: b.header(e.URL, true),
			Body: map[string]string{"current_password": apitest.Password, "new_password": "Another-pass-2"}}).Expect(t, 200)
		var body struct {
			AccessToken string `json:"access_token"`
		}
		r.JSON(t, &body)
		set := setCookies(r)
		fresh := browserSession{token: body.AccessToken, session: set["tuxlab_session"], csrf: set["tuxlab_csrf"]}
		if fresh.session == nil || fresh.csrf == nil || fresh.session.Value != body.AccessToken || fresh.csrf.Value == b.csrf.Value {
			t.Fatalf("password change set %v, want the new token's cookies", r.Header.Values("Set-Cookie"))
		}
		e.Do(apitest.Request{Method: "GET", Path: "/api/auth/me", Header: b.header(e.URL, false)}).Expect(t, 401)
		e.Do(apitest.Request{Method: "GET", Path: "/api/auth/me", Header: fresh.header(e.URL, false)}).Expect(t, 200)
		e.Do(apitest.Request{Method: "DELETE", Path: "/api/profile/avatar", Header: fresh.header(e.URL, true)}).Expect(t, 200)
	})
}

// TestTerminalSessionCookie: the terminal is a route like any other: the
// browser's session cookie opens it from this site's pages (and from a
// listed origin), never from another site, "*" notwithstanding; the token
// query parameter still works; without credentials it is 401, told after
// the upgrade (4401) to a WebSocket client.
func TestTerminalSessionCookie(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.CreateUser("carol", auth.RoleStudent)
		b := signInBrowser(t, e, "carol")
		c := createSandbox(t, e, u.Token, busyboxTemplate(t, e))
		path := fmt.Sprintf("/ws/terminal/%d", c.ID)
		open := func(origin string) *apitest.Terminal {
			t.Helper()
			// An empty token parameter (a page from before the cookie) names no credential.
			return e.DialTerminal(t, path+"?token=&cols=80", b.header(origin, false))
		}
		for _, origin := range []string{e.URL, listedOrigin} {
			tc := open(origin)
			tc.Exchange("echo cookie-$((6*7))\n", "cookie-42")
			tc.Hangup()
		}
		crossDetail := "Cross-site request refused: the session cookie works only from this site's own pages"
		open("https://evil.example.net").ExpectClosed(403, crossDetail)
		open("").ExpectClosed(403, crossDetail) // every browser names its Origin
		// Plain HTTP: the same answers, and 426 when the cookie is good.
		e.Do(apitest.Request{Method: "GET", Path: path, Header: b.header(e.URL, false)}).Expect(t, http.StatusUpgradeRequired)
		e.Do(apitest.Request{Method: "GET", Path: path, Header: b.header("https://evil.example.net", false)}).Expect(t, 403)

		// The token query parameter still works, and nothing is 401 (4401).
		tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
		tc.Exchange("echo query-$((6*7))\n", "query-42")
		e.DialTerminal(t, "/ws/terminal/"+fmt.Sprint(c.ID), nil).ExpectClosed(401, "Not authenticated")
		e.Do(apitest.Request{Method: "GET", Path: path}).Expect(t, 401)

		// Logout ends the cookie's terminals and the cookie.
		live := open(e.URL)
		live.Exchange("echo live-$((6*7))\n", "live-42")
		e.Do(apitest.Request{Method: "POST", Path: "/api/auth/logout", Header: b.header(e.URL, true)}).Expect(t, 200)
		live.ExpectClosed(401, "You logged out: sign in again")
		open(e.URL).ExpectClosed(401, "Could not validate credentials")
	}, withListedOrigins)
}

// TestSessionCookieSecure: the session cookies are Secure in production and
// on a request that came over HTTPS through a trusted proxy; not on plain
// HTTP in development, where a browser would refuse them.
func TestSessionCookieSecure(t *testing.T) {
	t.Parallel()
	login := func(t *testing.T, e *apitest.Env, h http.Header) bool {
		t.Helper()
		e.CreateUser("dave", auth.RoleStudent)
		h.Set("X-Tuxlab-Session", "cookie")
		r := e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login", Header: h,
			Body: map[string]string{"username": "dave", "password": apitest.Password}}).Expect(t, 200)
		set := setCookies(r)
		if set["tuxlab_session"] == nil || set["tuxlab_csrf"] == nil || set["tuxlab_session"].Secure != set["tuxlab_csrf"].Secure {
			t.Fatalf("Set-Cookie %v", r.Header.Values("Set-Cookie"))
		}
		return set["tuxlab_session"].Secure
	}
	proxied := func(c *config.Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} }
	cases := []struct {
		name   string
		opt    apitest.Option
		header http.Header
		secure bool
	}{
		{"development over http", proxied, http.Header{}, false},
		{"development, https at a trusted proxy", proxied, http.Header{"X-Forwarded-Proto": {"https"}}, true},
		{"development, an untrusted peer says https", func(*config.Config) {}, http.Header{"X-Forwarded-Proto": {"https"}}, false},
		{"production", func(c *config.Config) { c.Env = config.Production }, http.Header{}, true},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			apitest.Each(t, func(t *testing.T, e *apitest.Env) {
				if got := login(t, e, tt.header); got != tt.secure {
					t.Fatalf("Secure %v, want %v", got, tt.secure)
				}
			}, tt.opt)
		})
	}
}
