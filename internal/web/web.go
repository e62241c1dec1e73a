// Package web serves tuxlab's browser interface: a small client-side
// application of static ES modules (no framework, no build step) that calls
// the JSON API, the terminal over its WebSocket, and /docs, the OpenAPI
// document rendered by Swagger UI. Every file is embedded in the binary; no
// page loads anything from another origin.
//
// Pages are one HTML shell served at each page path (the application routes
// in the browser); assets live under /assets/<hash>/, where the hash is taken
// over every embedded file, so they can be cached for a year and a new binary
// changes every URL at once.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
)

//go:embed static
var staticFiles embed.FS

//go:embed pages
var pageFiles embed.FS

// PagePaths are the paths of the application's pages, as ServeMux patterns
// without the method. Each answers the same shell; the browser shows the page.
var PagePaths = []string{
	"/{$}",
	"/signin",
	"/signup",
	"/forgot-password",
	"/reset-password",
	"/verify-email",
	"/lessons/{id}",
	"/labs/{id}",
	"/exams",
	"/exams/{id}",
	"/dashboard",
	"/profile",
	"/classes",
	"/classes/{id}",
	"/admin",
	"/watch",
	"/recordings",
	"/recordings/{id}",
}

// PageCSP is the Content-Security-Policy of every page. Scripts come only from
// this origin and never inline; 'wasm-unsafe-eval' lets them compile
// WebAssembly (asciinema-player's terminal emulator, which replays
// recordings), and nothing else: no eval of script text. It is on every page
// because pages change without a reload (the policy of the first stays).
// Styles allow 'unsafe-inline' because xterm.js
// and Swagger UI write <style> elements at run time (they have no nonce
// option); a style cannot run code. connect-src 'self' covers the API and the
// terminal's ws:// or wss:// socket on the same host.
const PageCSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; object-src 'none'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// assetCSP is sent with every asset: nothing served under /assets/ is a page.
const assetCSP = "default-src 'none'; frame-ancestors 'none'"

// Handler serves the pages, /docs and the assets.
type Handler struct {
	b   *bundle
	mux *http.ServeMux
}

// New builds the handler from the embedded files.
func New() *Handler {
	h := &Handler{b: loadBundle(), mux: http.NewServeMux()}
	for _, p := range PagePaths {
		h.mux.Handle("GET "+p, h.page(h.b.index))
	}
	h.mux.Handle("GET /docs", h.page(h.b.docs))
	h.mux.HandleFunc("GET /assets/{hash}/{path...}", h.serveAsset)
	return h
}

// Patterns lists the ServeMux patterns the handler answers, for the server
// that mounts it beside the API. None of them starts with /api/ or /ws/.
func (h *Handler) Patterns() []string {
	out := make([]string, 0, len(PagePaths)+2)
	for _, p := range PagePaths {
		out = append(out, "GET "+p)
	}
	return append(out, "GET /docs", "GET /assets/{hash}/{path...}")
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// AssetPrefix is the path under which the current assets are served, such as
// "/assets/3f9c0a1b2c4d/".
func (h *Handler) AssetPrefix() string { return h.b.prefix }

// ServeNotFound answers the application's shell with status 404, for a
// browser that asked for an unknown page: the browser draws "This page does
// not exist" in the interface. The server calls it only for GET and HEAD of a
// path outside /api/, /ws/ and /assets/ whose Accept names text/html.
func (h *Handler) ServeNotFound(w http.ResponseWriter, r *http.Request) {
	setPageHeaders(w.Header())
	w.WriteHeader(http.StatusNotFound)
	if r.Method != http.MethodHead {
		w.Write(h.b.index)
	}
}

// setPageHeaders sets the headers every page is answered with.
func setPageHeaders(hd http.Header) {
	hd.Set("Content-Security-Policy", PageCSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Type", "text/html; charset=utf-8")
}

// page answers a rendered page: never cached without revalidation (the asset
// URLs inside change with each build), and under the strict policy.
func (h *Handler) page(body []byte) http.Handler {
	etag := etagOf(body)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		setPageHeaders(hd)
		hd.Set("ETag", etag)
		if matchETag(r, etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write(body)
	})
}

// serveAsset answers /assets/{hash}/{path...}. The current hash is cached for a
// year; another (a page from before an upgrade) gets the current file, revalidated.
func (h *Handler) serveAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := h.b.assets[r.PathValue("path")]
	if !ok {
		hd := w.Header()
		hd.Set("Content-Type", "application/json")
		hd.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"detail":"Not Found"}` + "\n"))
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", assetCSP)
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Vary", "Accept-Encoding")
	if r.PathValue("hash") == h.b.hash {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	body, etag := a.body, a.etag
	if gz := a.gzipped(); gz != nil && acceptsGzip(r) {
		body, etag = gz, strings.TrimSuffix(a.etag, `"`)+`-gz"`
		hd.Set("Content-Encoding", "gzip")
	}
	hd.Set("ETag", etag)
	if matchETag(r, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Write(body)
}

// bundle is the embedded interface, read once per process.
type bundle struct {
	hash, prefix string
	assets       map[string]*asset // by path under static/
	index, docs  []byte            // rendered pages
}

type asset struct {
	body  []byte
	ctype string
	etag  string

	gzOnce sync.Once
	gz     []byte
}

// gzipped returns the asset compressed, computed on first use; nil when
// compression does not pay (images, small files).
func (a *asset) gzipped() []byte {
	if len(a.body) < 1024 || !compressible(a.ctype) {
		return nil
	}
	a.gzOnce.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(a.body)
		zw.Close()
		a.gz = buf.Bytes()
	})
	return a.gz
}

func compressible(ctype string) bool {
	for _, p := range []string{"text/", "application/json", "image/svg+xml"} {
		if strings.HasPrefix(ctype, p) {
			return true
		}
	}
	return false
}

var (
	bundleOnce sync.Once
	theBundle  *bundle
)

func loadBundle() *bundle {
	bundleOnce.Do(func() { theBundle = readBundle(staticFiles, pageFiles) })
	return theBundle
}

// readBundle reads every asset under static/, hashes them together, and
// renders the pages with the assets' prefix. The files are compiled in, so a
// failure here is a build mistake: it panics.
func readBundle(static, pages fs.FS) *bundle {
	b := &bundle{assets: map[string]*asset{}}
	var names []string
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		panic(err)
	}
	sort.Strings(names)
	sum := sha256.New()
	for _, p := range names {
		body, err := fs.ReadFile(static, p)
		if err != nil {
			panic(err)
		}
		rel := strings.TrimPrefix(p, "static/")
		sum.Write([]byte(rel + "\x00"))
		sum.Write(body)
		b.assets[rel] = &asset{body: body, ctype: contentType(rel), etag: etagOf(body)}
	}
	b.hash = hex.EncodeToString(sum.Sum(nil))[:16]
	b.prefix = "/assets/" + b.hash + "/"
	tmpl := template.Must(template.ParseFS(pages, "pages/*.html"))
	render := func(name string) []byte {
		var buf bytes.Buffer
		if err := tmpl.ExecuteTemplate(&buf, name, map[string]string{"Assets": b.prefix}); err != nil {
			panic(err)
		}
		return buf.Bytes()
	}
	b.index, b.docs = render("index.html"), render("docs.html")
	return b
}

// contentType names the type of an asset by its extension; licence files and
// other extension-less text are plain text.
func contentType(name string) string {
	switch ext := path.Ext(name); ext {
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".md":
		return "text/markdown; charset=utf-8"
	case "", ".txt":
		return "text/plain; charset=utf-8"
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
		return "application/octet-stream"
	}
}

func etagOf(b []byte) string {
	s := sha256.Sum256(b)
	return `"` + hex.EncodeToString(s[:12]) + `"`
}

// matchETag reports whether the request's If-None-Match names etag.
func matchETag(r *http.Request, etag string) bool {
	for _, t := range strings.Split(r.Header.Get("If-None-Match"), ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0" {
			return true
		}
	}
	return false
}
