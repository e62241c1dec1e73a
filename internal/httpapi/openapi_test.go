package httpapi_test

import (
	"strconv"
	"strings"
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
)

// openAPIDoc is the part of the served document these tests read.
type openAPIDoc struct {
	Info struct {
		Version string `json:"version"`
	} `json:"info"`
	Servers []struct {
		URL string `json:"url"`
	} `json:"servers"`
	Paths      map[string]map[string]openAPIOperation `json:"paths"`
	Components struct {
		Schemas map[string]struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"schemas"`
	} `json:"components"`
}

type openAPIOperation struct {
	Security  *[]map[string][]string `json:"security"` // nil: the key is absent
	Responses map[string]struct {
		Headers map[string]struct {
			Required bool `json:"required"`
		} `json:"headers"`
	} `json:"responses"`
}

// TestOpenAPIDeclaresWhatTheServerDoes walks every operation of the served
// document: each says whether it needs a token, and each error status
// declares the headers writeError sets with it.
func TestOpenAPIDeclaresWhatTheServerDoes(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite")
	var doc openAPIDoc
	e.Get("/api/openapi.json", "").Expect(t, 200).JSON(t, &doc)

	if len(doc.Servers) == 0 || doc.Servers[0].URL == "" {
		t.Errorf("servers = %+v, want an entry with a url", doc.Servers)
	}
	paged := false
	for path, methods := range doc.Paths {
		for method, o := range methods {
			name := strings.ToUpper(method) + " " + path
			switch {
			case o.Security == nil:
				t.Errorf("%s: no security: say [] for a public route", name)
			case len(*o.Security) > 0 && o.Responses["401"].Headers == nil:
				t.Errorf("%s needs a token but documents no 401 with WWW-Authenticate", name)
			}
			for code, want := range map[string]struct {
				header   string
				required bool
			}{"401": {"WWW-Authenticate", true}, "429": {"Retry-After", true}, "503": {"Retry-After", false}} {
				r, ok := o.Responses[code]
				if !ok {
					continue
				}
				h, ok := r.Headers[want.header]
				if !ok {
					t.Errorf("%s %s does not declare %s", name, code, want.header)
				} else if want.required && !h.Required {
					t.Errorf("%s %s: %s is always sent, so required", name, code, want.header)
				}
			}
			for _, r := range o.Responses {
				if _, ok := r.Headers["X-Total-Count"]; ok {
					paged = true
				}
			}
		}
	}
	// Pagination shipped in 0.3.0, two-factor sign-in in 0.4.0: a document
	// with them is not older.
	if paged && versionBefore(doc.Info.Version, 0, 3) {
		t.Errorf("info.version %q, but pagination shipped in 0.3.0", doc.Info.Version)
	}
	if _, mfa := doc.Paths["/api/auth/mfa/setup"]; mfa && versionBefore(doc.Info.Version, 0, 4) {
		t.Errorf("info.version %q, but two-factor sign-in shipped in 0.4.0", doc.Info.Version)
	}
	var health struct {
		Version string `json:"version"`
	}
	if e.Get("/healthz", "").Expect(t, 200).JSON(t, &health); health.Version != doc.Info.Version {
		t.Errorf("/healthz says version %q, the document %q", health.Version, doc.Info.Version)
	}
}

// versionBefore reports whether the release v (major.minor.patch) is older
// than major.minor.0; a version it cannot read counts as older.
func versionBefore(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return true
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return true
	}
	return ma < major || ma == major && mi < minor
}

// TestOpenAPIPasswordLimitsAreBytes: auth counts a password's bytes, so the
// document may not promise a minimum in characters that a password the server
// accepts breaks, and says the limit is bytes.
func TestOpenAPIPasswordLimitsAreBytes(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite")
	var doc openAPIDoc
	e.Get("/api/openapi.json", "").Expect(t, 200).JSON(t, &doc)

	// Two 4-byte characters: 8 bytes, a password the server takes.
	short := "\U0001F427\U0001F511"
	e.Do(apitest.Request{Method: "POST", Path: "/api/auth/register", Body: map[string]string{
		"username": "tux", "email": "tux@tuxlab.org", "password": short}}).Expect(t, 201)
	// 37 two-byte characters: 74 bytes, refused although under 72 characters.
	long := strings.Repeat("é", 37)
	r := e.Do(apitest.Request{Method: "POST", Path: "/api/auth/register", Body: map[string]string{
		"username": "penguin", "email": "penguin@tuxlab.org", "password": long}}).Expect(t, 422)
	if !strings.Contains(string(r.Body), "72 bytes") {
		t.Fatalf("74-byte password: %s", r.Body)
	}

	for _, f := range []struct{ schema, prop string }{
		{"RegisterRequest", "password"}, {"CreateUserRequest", "password"}, {"PasswordChange", "new_password"},
	} {
		p := doc.Components.Schemas[f.schema].Properties[f.prop]
		if p == nil {
			t.Errorf("%s.%s is not documented", f.schema, f.prop)
			continue
		}
		if min, ok := p["minLength"].(float64); ok && int(min) > len([]rune(short)) {
			t.Errorf("%s.%s: minLength %v refuses %q, which the server takes", f.schema, f.prop, min, short)
		}
		if max, ok := p["maxLength"].(float64); ok && int(max) < auth.MaxPasswordLen {
			t.Errorf("%s.%s: maxLength %v refuses 72-byte ASCII passwords", f.schema, f.prop, max)
		}
		if desc, _ := p["description"].(string); !strings.Contains(desc, "72 bytes") {
			t.Errorf("%s.%s: the description %q does not say the limit is 72 bytes", f.schema, f.prop, desc)
		}
	}
}
