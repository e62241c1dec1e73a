package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"tuxlab/content"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
)

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		e.Get("/healthz", "").Expect(t, 200)
		e.Get("/readyz", "").Expect(t, 200)
		e.DB.Close() // the database goes away: ready no more, still alive
		if r := e.Get("/readyz", "").Expect(t, http.StatusServiceUnavailable); r.Detail() != "Database unavailable" {
			t.Fatalf("detail %q", r.Detail())
		}
		e.Get("/healthz", "").Expect(t, 200)
	})
}

func TestMetricsByRoutePattern(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("kim", auth.RoleStudent)
	// New series appear under concurrent requests, none lost (run with -race).
	var reqs []apitest.Request
	for range 20 {
		reqs = append(reqs, apitest.Request{Method: "GET", Path: "/api/auth/me", Token: u.Token},
			apitest.Request{Method: "GET", Path: "/api/auth/me"})
	}
	e.DoConcurrently(reqs)
	e.Get("/api/auth/me", u.Token).Expect(t, 200)
	e.Get("/api/auth/me", "").Expect(t, 401)
	e.Get("/api/admin/users/7/role", "").Expect(t, 405)
	// Invented methods share one label: a client cannot add series at will.
	for _, m := range []string{"FOO", "BAR"} {
		e.Do(apitest.Request{Method: m, Path: "/api/auth/me"}).Expect(t, 405)
	}
	body := string(e.Get("/metrics", "").Expect(t, 200).Body)
	if strings.Contains(body, `method="FOO"`) {
		t.Error("an invented method became a metrics label")
	}
	for _, want := range []string{
		`tuxlab_http_requests_total{method="GET",route="GET /api/auth/me",status="200"} 21`,
		`tuxlab_http_requests_total{method="GET",route="GET /api/auth/me",status="401"} 21`,
		`tuxlab_http_requests_total{method="GET",route="unmatched",status="405"} 1`,
		`tuxlab_http_requests_total{method="other",route="unmatched",status="405"} 2`,
		`tuxlab_http_request_duration_seconds_bucket{method="GET",route="GET /api/auth/me",status="200",le="+Inf"} 21`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite")
	r := e.Do(apitest.Request{Method: "GET", Path: "/healthz", Header: http.Header{"X-Request-Id": {"trace-abc.123"}}})
	if got := r.Header.Get("X-Request-ID"); got != "trace-abc.123" {
		t.Fatalf("honoured id = %q", got)
	}
	for _, bad := range []string{"", "has spaces in it", strings.Repeat("x", 65)} {
		r := e.Do(apitest.Request{Method: "GET", Path: "/healthz", Header: http.Header{"X-Request-Id": {bad}}})
		if got := r.Header.Get("X-Request-ID"); got == bad || len(got) != 24 {
			t.Fatalf("for %q the id is %q, want a generated one", bad, got)
		}
	}
}

func TestCORS(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.CORSOrigins = []string{"https://learn.tuxlab.org"} })
	pre := func(origin string) *apitest.Response {
		return e.Do(apitest.Request{Method: "OPTIONS", Path: "/api/auth/login", Header: http.Header{
			"Origin": {origin}, "Access-Control-Request-Method": {"POST"}, "Access-Control-Request-Headers": {"content-type"}}})
	}
	r := pre("https://learn.tuxlab.org").Expect(t, http.StatusNoContent)
	if r.Header.Get("Access-Control-Allow-Origin") != "https://learn.tuxlab.org" || !strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight headers %v", r.Header)
	}
	if r := pre("https://evil.example.net").Expect(t, http.StatusForbidden); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("disallowed origin got CORS headers")
	}
	r = e.Do(apitest.Request{Method: "GET", Path: "/healthz", Header: http.Header{"Origin": {"https://learn.tuxlab.org"}}})
	if r.Header.Get("Access-Control-Allow-Origin") != "https://learn.tuxlab.org" || !strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "X-Total-Count") {
		t.Fatalf("simple request headers %v", r.Header)
	}
}

func TestOpenAPIDocumentAndDocs(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite")
	r := e.Get("/api/openapi.json", "").Expect(t, 200)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	r.JSON(t, &doc)
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	for path, methods := range map[string][]string{
		"/api/auth/register": {"post"}, "/api/auth/login": {"post"}, "/api/auth/me": {"get"},
		"/api/admin/users": {"get", "post"}, "/api/admin/users/{id}/role": {"put"}, "/api/admin/users/{id}/active": {"put"},
		"/api/admin/users/{id}": {"delete"}, "/api/admin/stats": {"get"},
	} {
		for _, m := range methods {
			if doc.Paths[path][m] == nil {
				t.Errorf("document lacks %s %s", m, path)
			}
		}
	}
	// /docs renders the document in the browser (Swagger UI, internal/web).
	if html := string(e.Get("/docs", "").Expect(t, 200).Body); !strings.Contains(html, "<!doctype html>") || !strings.Contains(html, "/api/openapi.json") {
		t.Fatal("/docs is not the page of the OpenAPI document")
	}
	var anyDoc map[string]any
	if err := json.Unmarshal(r.Body, &anyDoc); err != nil {
		t.Fatal(err)
	}
}

func TestMetricsToken(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.MetricsToken = "metrics-secret-0123456789" })
	e.Get("/metrics", "").Expect(t, http.StatusUnauthorized)
	e.Get("/metrics", "wrong").Expect(t, http.StatusUnauthorized)
	if body := string(e.Get("/metrics", "metrics-secret-0123456789").Expect(t, http.StatusOK).Body); !strings.Contains(body, "go_goroutines") {
		t.Fatal("no metrics with the right token")
	}
}

// TestTrustedProxies: behind a listed proxy every learner of a class shares
// the proxy's address, so the client is read from X-Forwarded-For, only then.
func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	attempt := func(e *apitest.Env, forwarded string) int {
		return e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login", Body: map[string]string{"username": "nobody", "password": "wrong password"},
			Header: http.Header{"X-Forwarded-For": {forwarded}}}).Status
	}
	limit := func(c *config.Config) { c.AuthPerIPPerMinute = 2 }
	behind := apitest.New(t, "sqlite", limit, func(c *config.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	for range 2 {
		if s := attempt(behind, "198.51.100.1"); s != http.StatusUnauthorized {
			t.Fatalf("first attempts from 198.51.100.1: %d", s)
		}
	}
	if s := attempt(behind, "198.51.100.1"); s != http.StatusTooManyRequests {
		t.Fatalf("third attempt from 198.51.100.1: %d", s)
	}
	// Another learner behind the same proxy has a budget of their own; a
	// forged entry on the left of the chain changes nothing.
	if s := attempt(behind, "198.51.100.2"); s != http.StatusUnauthorized {
		t.Fatalf("another client behind the proxy: %d", s)
	}
	if s := attempt(behind, "203.0.113.9, 198.51.100.1"); s != http.StatusTooManyRequests {
		t.Fatalf("a forged left-hand entry escaped the limit: %d", s)
	}

	// Without trusted proxies the header is ignored: anyone could write it.
	direct := apitest.New(t, "sqlite", limit)
	attempt(direct, "198.51.100.1")
	attempt(direct, "198.51.100.2")
	if s := attempt(direct, "198.51.100.3"); s != http.StatusTooManyRequests {
		t.Fatalf("a forged X-Forwarded-For escaped the per-address limit: %d", s)
	}
}

// TestResponsesCarryContentLength: on the wire, through net/http itself and
// not the validating recorder, a small JSON body (net/http counts it) and a
// large one (the handler declares it) both come with their exact length, never
// chunked, so clients and proxies can keep the connection.
func TestResponsesCarryContentLength(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite")
	if _, _, err := e.App.Lessons.ImportIfEmpty(t.Context(), content.Curriculum()); err != nil {
		t.Fatal(err)
	}
	u := e.CreateUser("learner", auth.RoleStudent)
	srv := httptest.NewServer(e.App.Server)
	defer srv.Close()
	for _, c := range []struct {
		path  string
		large bool
	}{{"/api/auth/me", false}, {"/api/lessons/modules", true}, {"/api/nowhere", false}} {
		req, _ := http.NewRequest("GET", srv.URL+c.path, nil)
		req.Header.Set("Authorization", "Bearer "+u.Token)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(res.TransferEncoding) > 0 || res.ContentLength != int64(len(body)) || (len(body) > 2048) != c.large {
			t.Errorf("%s: %d bytes, Content-Length %d, Transfer-Encoding %v", c.path, len(body), res.ContentLength, res.TransferEncoding)
		}
	}
}
