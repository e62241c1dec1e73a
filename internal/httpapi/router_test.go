package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRouterPicksWhatServeMuxPicks: every route the static map holds is the
// one ServeMux picks for its method and path, the map holds the routes it
// should, and requests it must not answer go on to ServeMux.
func TestRouterPicksWhatServeMuxPicks(t *testing.T) {
	t.Parallel()
	s := New(Deps{})
	if len(s.router.static) < 20 {
		t.Fatalf("only %d static routes", len(s.router.static))
	}
	for key, sr := range s.router.static {
		_, pattern := s.router.mux.Handler(httptest.NewRequest(key.method, key.path, nil))
		if pattern != sr.pattern {
			t.Errorf("%s %s: the map has %q, ServeMux picks %q", key.method, key.path, sr.pattern, pattern)
		}
	}
	// The same routes, with handlers that tell which pattern they were reached by.
	var got string
	probe := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Pattern })
	rt := &router{static: map[staticKey]staticRoute{}, mux: http.NewServeMux()}
	for _, route := range s.routes {
		rt.mux.Handle(route.method+" "+route.path, probe)
		rt.addStatic(route.method+" "+route.path, probe)
	}
	rt.mux.Handle("/", probe)
	for _, c := range []struct{ method, path, pattern string }{
		{"GET", "/api/auth/me", "GET /api/auth/me"},
		{"GET", "/api/lessons/modules", "GET /api/lessons/modules"},
		{"POST", "/api/auth/login", "POST /api/auth/login"},
		{"GET", "/api/lessons/themes/7", "GET /api/lessons/themes/{theme_id}"}, // a wildcard: ServeMux's
		{"HEAD", "/api/auth/me", "GET /api/auth/me"},                           // HEAD: ServeMux's
		{"GET", "/api/auth%2Fme", "/"},                                         // escaped: not /api/auth/me
		{"GET", "/api/auth/me/", "/"},
		{"DELETE", "/api/auth/me", "/"},
	} {
		got = ""
		rt.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(c.method, c.path, nil))
		if got != c.pattern {
			t.Errorf("%s %s: routed to %q, want %q", c.method, c.path, got, c.pattern)
		}
	}
}
