package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
)

func TestErrorShapes(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.CreateUser("judy", auth.RoleStudent)
		tests := []struct {
			name   string
			req    apitest.Request
			status int
			detail string
		}{
			{"unknown route", apitest.Request{Method: "GET", Path: "/api/nothing-here"}, 404, "Not Found"},
			{"unknown route outside api", apitest.Request{Method: "GET", Path: "/wp-login.php"}, 404, "Not Found"},
			{"wrong method", apitest.Request{Method: "DELETE", Path: "/api/auth/me", Token: u.Token}, 405, "Method Not Allowed"},
			{"wrong method on login", apitest.Request{Method: "GET", Path: "/api/auth/login"}, 405, "Method Not Allowed"},
			{"body over the limit", apitest.Request{Method: "POST", Path: "/api/auth/register", Body: `{"username":"` + strings.Repeat("a", 2<<20) + `"}`}, 413, "Request body too large"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := e.Do(tt.req).Expect(t, tt.status)
				if r.Detail() != tt.detail {
					t.Fatalf("detail %q, want %q (%s)", r.Detail(), tt.detail, r.Body)
				}
				if ct := r.Header.Get("Content-Type"); ct != "application/json" {
					t.Fatalf("content type %q", ct)
				}
				if tt.status == 405 && r.Header.Get("Allow") == "" {
					t.Fatal("405 without Allow")
				}
			})
		}
	})
}

func TestBodyOverLimitWithoutContentLength(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite")
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"username":"`))
		for range 3 << 10 {
			pw.Write([]byte(strings.Repeat("a", 1024)))
		}
		pw.Write([]byte(`"}`))
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", e.URL+"/api/auth/login", pr)
	req.ContentLength = -1 // chunked: the limit must hold while reading
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.Server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
}
