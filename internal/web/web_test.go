package web_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/web"
)

// get fetches path from e with extra headers.
func get(e *apitest.Env, path string, header ...string) *apitest.Response {
	e.T.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return e.Do(apitest.Request{Method: "GET", Path: path, Header: h})
}

var scriptTag = regexp.MustCompile(`(?is)<script\b[^>]*>`)
var assetRef = regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`)

// TestPages: every page path answers the same shell under the strict policy,
// through the whole server (middleware, JSON fallbacks and all).
func TestPages(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite")
	var shell []byte
	for _, p := range []string{"/", "/signin", "/signup", "/forgot-password", "/reset-password", "/verify-email", "/lessons/12", "/labs/3", "/exams", "/exams/7", "/dashboard", "/profile", "/admin"} {
		r := get(e, p).Expect(t, http.StatusOK)
		if ct := r.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", p, ct)
		}
		if shell == nil {
			shell = r.Body
		} else if !bytes.Equal(shell, r.Body) {
			t.Errorf("%s answers another page than /", p)
		}
		checkPageHeaders(t, p, r)
	}
	html := string(shell)
	if !strings.Contains(html, `<script type="module" src="/assets/`) {
		t.Fatalf("the shell loads no application module:\n%s", html)
	}
	for _, tag := range scriptTag.FindAllString(html, -1) {
		if !strings.Contains(tag, ` src="/assets/`) {
			t.Errorf("inline or foreign script %s", tag)
		}
	}
	if strings.Contains(html, "http://") || strings.Contains(html, "https://") {
		t.Error("the shell names another origin")
	}
	// Revalidation: the ETag comes back as 304.
	r := get(e, "/")
	get(e, "/", "If-None-Match", r.Header.Get("ETag")).Expect(t, http.StatusNotModified)
}

func checkPageHeaders(t *testing.T, p string, r *apitest.Response) {
	t.Helper()
	csp := r.Header.Get("Content-Security-Policy")
	// Scripts of this origin only, which may compile WebAssembly (the
	// recordings' player) and nothing more: no inline script, no eval.
	for _, want := range []string{"default-src 'self'", "script-src 'self' 'wasm-unsafe-eval';", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: CSP %q lacks %q", p, csp, want)
		}
	}
	if strings.Contains(csp, "'unsafe-eval'") || strings.Contains(csp, "script-src 'self' 'wasm-unsafe-eval' 'unsafe") {
		t.Errorf("%s: scripts may run inline: %q", p, csp)
	}
	for h, want := range map[string]string{
		"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache",
	} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s: %s %q, want %q", p, h, got, want)
		}
	}
	if r.Header.Get("ETag") == "" {
		t.Errorf("%s: no ETag", p)
	}
}

// TestDocs: /docs is Swagger UI, vendored, over /api/openapi.json.
func TestDocs(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite")
	r := get(e, "/docs").Expect(t, http.StatusOK)
	checkPageHeaders(t, "/docs", r)
	html := string(r.Body)
	for _, want := range []string{"vendor/swagger-ui/swagger-ui-bundle.js", "vendor/swagger-ui/swagger-ui.css", "docs.js", "/api/openapi.json"} {
		if !strings.Contains(html, want) {
			t.Errorf("/docs lacks %s", want)
		}
	}
	for _, tag := range scriptTag.FindAllString(html, -1) {
		if !strings.Contains(tag, ` src="/assets/`) {
			t.Errorf("inline or foreign script %s", tag)
		}
	}
	init := get(e, assetPath(t, html, "docs.js")).Expect(t, http.StatusOK)
	if !bytes.Contains(init.Body, []byte(`"/api/openapi.json"`)) {
		t.Error("docs.js does not load /api/openapi.json")
	}
}

// assetPath finds the URL of the asset whose path ends in name in a page.
func assetPath(t *testing.T, html, name string) string {
	t.Helper()
	for _, m := range assetRef.FindAllStringSubmatch(html, -1) {
		if strings.HasSuffix(m[1], "/"+name) {
			return m[1]
		}
	}
	t.Fatalf("no asset %s in the page", name)
	return ""
}

// TestAssets: types, year-long caching under the current hash, ETags,
// gzip, and 404 for what does not exist.
func TestAssets(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite")
	html := string(get(e, "/").Body) + string(get(e, "/docs").Body)
	prefix := web.New().AssetPrefix()
	types := map[string]string{
		".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
		".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".md": "text/markdown; charset=utf-8",
	}
	seen := 0
	for _, m := range assetRef.FindAllStringSubmatch(html, -1) {
		p := m[1]
		if !strings.HasPrefix(p, prefix) {
			t.Errorf("%s is not under the current prefix %s", p, prefix)
		}
		r := get(e, p).Expect(t, http.StatusOK)
		if want := types[path.Ext(p)]; r.Header.Get("Content-Type") != want {
			t.Errorf("%s: Content-Type %q, want %q", p, r.Header.Get("Content-Type"), want)
		}
		if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
			t.Errorf("%s: Cache-Control %q", p, cc)
		}
		if r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", p)
		}
		etag := r.Header.Get("ETag")
		get(e, p, "If-None-Match", etag).Expect(t, http.StatusNotModified)
		seen++
	}
	if seen < 5 {
		t.Fatalf("only %d assets referenced by the pages", seen)
	}

	// The terminal's modules, with gzip for whoever asks.
	xterm := prefix + "vendor/xterm/xterm.mjs"
	plain := get(e, xterm, "Accept-Encoding", "identity").Expect(t, http.StatusOK)
	gz := get(e, xterm, "Accept-Encoding", "gzip").Expect(t, http.StatusOK)
	if gz.Header.Get("Content-Encoding") != "gzip" || gz.Header.Get("Vary") != "Accept-Encoding" || len(gz.Body) >= len(plain.Body) {
		t.Fatalf("gzip: encoding %q, vary %q, %d of %d bytes", gz.Header.Get("Content-Encoding"), gz.Header.Get("Vary"), len(gz.Body), len(plain.Body))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.Body))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	if !bytes.Equal(unzipped, plain.Body) {
		t.Fatal("the gzip body is not the file")
	}
	if gz.Header.Get("ETag") == plain.Header.Get("ETag") {
		t.Fatal("the gzip body shares the plain body's ETag")
	}

	// A page from before an upgrade asks with an old hash: it gets today's
	// file, revalidated instead of cached for a year.
	old := get(e, "/assets/0123456789abcdef/app.js").Expect(t, http.StatusOK)
	if old.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("old hash: Cache-Control %q", old.Header.Get("Cache-Control"))
	}
	for _, p := range []string{prefix + "nope.js", prefix + "../web.go", prefix, "/assets/", "/assets/x"} {
		r := get(e, p)
		if r.Status != http.StatusNotFound || r.Detail() != "Not Found" {
			t.Errorf("%s: %d %s", p, r.Status, r.Body)
		}
	}
}

// TestAPIStaysJSON: the interface takes no path of the API's: unknown API
// and terminal paths, wrong methods and unknown pages answer as before.
func TestAPIStaysJSON(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite")
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/api/nope", 404}, {"GET", "/api/", 404}, {"GET", "/api", 404}, {"GET", "/ws/nope", 404},
		{"GET", "/ws/terminal/", 404}, {"GET", "/nope", 404}, {"GET", "/lessons", 404}, {"GET", "/lessons/1/2", 404},
		{"POST", "/", 405}, {"DELETE", "/lessons/1", 405}, {"GET", "/api/auth/login", 405}, {"POST", "/docs", 405},
	} {
		r := e.Do(apitest.Request{Method: c.method, Path: c.path})
		if r.Status != c.status || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s: %d %q %s", c.method, c.path, r.Status, r.Header.Get("Content-Type"), r.Body)
		}
	}
	for _, p := range web.New().Patterns() {
		if strings.Contains(p, " /api") || strings.Contains(p, " /ws") || !strings.HasPrefix(p, "GET /") {
			t.Errorf("pattern %q", p)
		}
	}
}

// TestNotFoundPage: a browser that asks for an unknown page (Accept names
// text/html) gets the application's shell with status 404, which draws "This
// page does not exist"; API clients, and every unknown /api/, /ws/ and
// /assets/ path, keep the JSON 404.
func TestNotFoundPage(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite")
	shell := get(e, "/").Expect(t, http.StatusOK).Body
	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	for _, c := range []struct {
		method, path, accept string
		status               int
		html                 bool
	}{
		{"GET", "/nope", browser, 404, true},
		{"GET", "/lessons", browser, 404, true},
		{"GET", "/lessons/1/2", "text/html", 404, true},
		{"HEAD", "/nope", browser, 404, true},
		{"GET", "/nope", "", 404, false},
		{"GET", "/nope", "*/*", 404, false},
		{"GET", "/nope", "application/json", 404, false},
		{"GET", "/nope", "text/html;q=0, application/json", 404, false},
		{"GET", "/api/nope", browser, 404, false},
		{"GET", "/api", browser, 404, false},
		{"GET", "/ws/nope", browser, 404, false},
		{"GET", "/ws/terminal/", browser, 404, false},
		{"GET", "/assets/nope", browser, 404, false},
		{"GET", "/avatars/", browser, 404, false},
		{"POST", "/nope", browser, 404, false},
		{"POST", "/", browser, 405, false},
	} {
		h := http.Header{}
		if c.accept != "" {
			h.Set("Accept", c.accept)
		}
		r := e.Do(apitest.Request{Method: c.method, Path: c.path, Header: h})
		ct := r.Header.Get("Content-Type")
		name := c.method + " " + c.path + " Accept " + c.accept
		if r.Status != c.status {
			t.Errorf("%s: status %d, want %d", name, r.Status, c.status)
		}
		if !c.html {
			if !strings.HasPrefix(ct, "application/json") || !bytes.Contains(r.Body, []byte(`"detail"`)) {
				t.Errorf("%s: %q %s, want the JSON error", name, ct, r.Body)
			}
			continue
		}
		if ct != "text/html; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", name, ct)
		}
		if csp := r.Header.Get("Content-Security-Policy"); csp != web.PageCSP {
			t.Errorf("%s: CSP %q", name, csp)
		}
		if !strings.Contains(r.Header.Get("Vary"), "Accept") {
			t.Errorf("%s: Vary %q lacks Accept", name, r.Header.Get("Vary"))
		}
		if c.method == "GET" && !bytes.Equal(r.Body, shell) {
			t.Errorf("%s: the body is not the application's shell:\n%s", name, r.Body)
		}
	}
}

var importRe = regexp.MustCompile(`(?m)^\s*import\s+(?:[^"']*?\s+from\s+)?["']([^"']+)["']`)

// TestModulesResolve: every import between the interface's modules names an
// embedded file, so a typo fails here and not in a learner's browser.
func TestModulesResolve(t *testing.T) {
	t.Parallel()
	root := os.DirFS("static")
	n := 0
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".js" || strings.HasPrefix(p, "vendor/") {
			return err
		}
		src, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		for _, m := range importRe.FindAllStringSubmatch(string(src), -1) {
			n++
			if !strings.HasPrefix(m[1], "./") && !strings.HasPrefix(m[1], "../") {
				t.Errorf("%s imports %q: only relative imports of embedded files", p, m[1])
				continue
			}
			target := path.Join(path.Dir(p), m[1])
			if _, err := fs.Stat(root, target); err != nil {
				t.Errorf("%s imports %s, which does not exist", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("found only %d imports", n)
	}
}

// TestVendored: each vendored library has its licence and its line in VENDORED.md.
func TestVendored(t *testing.T) {
	t.Parallel()
	record, err := os.ReadFile("static/vendor/VENDORED.md")
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := os.ReadDir("static/vendor")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		if _, err := os.Stat(path.Join("static/vendor", d.Name(), "LICENSE")); err != nil {
			t.Errorf("vendor/%s has no LICENSE", d.Name())
		}
		if !bytes.Contains(record, []byte("`"+d.Name()+"/`")) {
			t.Errorf("VENDORED.md does not record vendor/%s", d.Name())
		}
	}
}

// TestNoImportCycles: the graph of the interface's ES module imports has no
// cycle. A cycle works only by the accident of evaluation order: a module in it
// may run before the bindings it imports are initialised.
func TestNoImportCycles(t *testing.T) {
	t.Parallel()
	graph, err := moduleGraph(os.DirFS("static"))
	if err != nil {
		t.Fatal(err)
	}
	if len(graph) < 10 {
		t.Fatalf("found only %d modules", len(graph))
	}
	if cycle := findCycle(graph); cycle != nil {
		t.Errorf("import cycle: %s", strings.Join(cycle, " -> "))
	}
}

// TestFindCycle: the cycle finder itself sees cycles, long and short, and
// passes a graph that shares modules without looping.
func TestFindCycle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		graph map[string][]string
		want  bool
	}{
		{"none", map[string][]string{"a": {"b", "c"}, "b": {"c"}, "c": nil}, false},
		{"self", map[string][]string{"a": {"a"}}, true},
		{"pair", map[string][]string{"app.js": {"pages/p.js"}, "pages/p.js": {"app.js"}}, true},
		{"long", map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"d"}, "d": {"b"}}, true},
	} {
		if got := findCycle(tc.graph) != nil; got != tc.want {
			t.Errorf("%s: cycle found %v, want %v", tc.name, got, tc.want)
		}
	}
}

// moduleGraph maps each non-vendored module of root to the modules it imports.
func moduleGraph(root fs.FS) (map[string][]string, error) {
	graph := map[string][]string{}
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".js" || strings.HasPrefix(p, "vendor/") {
			return err
		}
		src, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		graph[p] = nil
		for _, m := range importRe.FindAllStringSubmatch(string(src), -1) {
			graph[p] = append(graph[p], path.Join(path.Dir(p), m[1]))
		}
		return nil
	})
	return graph, err
}

// findCycle returns one cycle of graph as the path that closes it, or nil.
func findCycle(graph map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = open
		stack = append(stack, n)
		for _, m := range graph[n] {
			switch state[m] {
			case open:
				i := len(stack) - 1
				for stack[i] != m {
					i--
				}
				return append(append([]string{}, stack[i:]...), m)
			case unseen:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return nil
	}
	names := make([]string, 0, len(graph))
	for n := range graph {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if state[n] == unseen {
			if c := visit(n); c != nil {
				return c
			}
		}
	}
	return nil
}
