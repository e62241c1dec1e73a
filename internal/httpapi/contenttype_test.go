package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
)

// withType is a header carrying one Content-Type, or none at all for "".
func withType(ct string) http.Header {
	if ct == "" {
		return http.Header{"Content-Type": nil}
	}
	return http.Header{"Content-Type": {ct}}
}

// TestJSONRoutesRequireJSON: a route that reads a JSON body takes it only as
// application/json (parameters allowed, a charset only utf-8) or
// application/...+json. A cross-site page can POST text/plain, form or
// multipart bodies without a preflight; none of them registers an account.
func TestJSONRoutesRequireJSON(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ctx := context.Background()
		users := func() int {
			t.Helper()
			st, err := e.App.Auth.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return st.Total
		}
		body := `{"username":"mallory","email":"mallory@tuxlab.org","password":"correct horse battery"}`
		registerAs := func(ct string) *apitest.Response {
			return e.Do(apitest.Request{Method: "POST", Path: "/api/auth/register", Body: body, Header: withType(ct)})
		}
		for _, tt := range []struct{ ct, detail string }{
			{"text/plain", `Unsupported media type "text/plain"`},
			{"text/plain;charset=UTF-8", `Unsupported media type "text/plain"`},
			{"application/x-www-form-urlencoded", "Unsupported media type"},
			{"multipart/form-data; boundary=x", "Unsupported media type"},
			{"", "Content-Type required"},
			{"text/json", "Unsupported media type"},
			{"application/jsonx", "Unsupported media type"},
			{"application/+json", "Unsupported media type"},
			{"application/json; charset=iso-8859-1", `Unsupported charset "iso-8859-1"`},
			{"application/json; charset", "Unsupported media type"}, // malformed parameters
		} {
			r := registerAs(tt.ct).Expect(t, http.StatusUnsupportedMediaType)
			if !strings.Contains(r.Detail(), tt.detail) {
				t.Fatalf("%q: detail %q, want it to say %q", tt.ct, r.Detail(), tt.detail)
			}
			if n := users(); n != 0 {
				t.Fatalf("%q: a refused body created %d users", tt.ct, n)
			}
		}
		// JSON by any of its names registers.
		for i, ct := range []string{"application/json", "Application/JSON; charset=UTF-8", "application/vnd.tuxlab+json"} {
			name := []string{"alice", "bob", "carol"}[i]
			r := e.Do(apitest.Request{Method: "POST", Path: "/api/auth/register", Header: withType(ct),
				Body: `{"username":"` + name + `","email":"` + name + `@tuxlab.org","password":"correct horse battery"}`})
			r.Expect(t, http.StatusCreated)
		}
		if n := users(); n != 3 {
			t.Fatalf("%d users, want 3", n)
		}

		// Every other route with a JSON body refuses the same way, before it acts.
		admin := e.CreateUser("root", auth.RoleAdmin)
		alice := e.CreateUser("alicia", auth.RoleStudent)
		for _, rq := range []apitest.Request{
			{Method: "POST", Path: "/api/auth/login", Body: `{"username":"alice","password":"correct horse battery"}`},
			{Method: "PUT", Path: "/api/profile/me", Token: alice.Token, Body: `{"bio":"changed"}`},
			{Method: "PUT", Path: "/api/profile/password", Token: alice.Token, Body: `{"current_password":"` + apitest.Password + `","new_password":"another long one"}`},
			{Method: "POST", Path: "/api/containers/create", Token: alice.Token, Body: `{"template_id":1}`},
			{Method: "POST", Path: "/api/exams/1/submit", Token: alice.Token, Body: `{"answers":[]}`},
			{Method: "POST", Path: "/api/admin/users", Token: admin.Token, Body: `{"username":"eve","email":"eve@tuxlab.org","password":"long enough pw"}`},
			{Method: "POST", Path: "/api/admin/exams?slug=q&title=Q&time_limit_minutes=5", Token: admin.Token, Body: `{"questions":[]}`},
		} {
			rq.Header = withType("text/plain")
			if r := e.Do(rq); r.Status != http.StatusUnsupportedMediaType {
				t.Fatalf("%s %s as text/plain: %d %s", rq.Method, rq.Path, r.Status, r.Body)
			}
		}
		if p := getProfile(t, e, alice.Token); p.Bio != "" {
			t.Fatalf("a text/plain body changed the profile: %+v", p)
		}
		if n := users(); n != 5 {
			t.Fatalf("%d users after the refused admin create, want 5", n)
		}
		e.Get("/api/auth/me", alice.Token).Expect(t, http.StatusOK) // the password did not change

		// Routes that take other types keep them: YAML for exams, Markdown for lessons.
		e.Do(apitest.Request{Method: "POST", Path: "/api/admin/exams?slug=q&title=Q&time_limit_minutes=5", Token: admin.Token,
			Header: withType("application/yaml"), Body: "questions:\n  - kind: single_choice\n    prompt: Where am I?\n    options: [ls, pwd]\n    answer: 1\n"}).Expect(t, http.StatusCreated)
	})
}
