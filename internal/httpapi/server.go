// Package httpapi is tuxlab's HTTP interface: the route table, middleware, the
// one error writer, JSON decoding and encoding, and the OpenAPI document that
// is generated from the same route table the server runs.
package httpapi

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"tuxlab/internal/auth"
	"tuxlab/internal/class"
	"tuxlab/internal/dashboard"
	"tuxlab/internal/errs"
	"tuxlab/internal/exam"
	"tuxlab/internal/lab"
	"tuxlab/internal/lesson"
	"tuxlab/internal/profile"
	"tuxlab/internal/recording"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/share"
	"tuxlab/internal/terminal"
)

// Pinger reports whether the database answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// UI is a browser interface served beside the API (internal/web).
type UI interface {
	http.Handler
	// Patterns lists the ServeMux patterns it answers, such as "GET /{$}";
	// none may overlap the API's, so unknown /api/ and /ws/ paths stay JSON 404.
	Patterns() []string
	// ServeNotFound answers an unknown page path that a browser asked for
	// (see wantsPage) with the interface's own 404 page.
	ServeNotFound(w http.ResponseWriter, r *http.Request)
}

// Deps are what the server needs from the rest of tuxlab.
type Deps struct {
	Auth      *auth.Service
	Lessons   *lesson.Service
	Sandboxes *sandbox.Service
	Terminals *terminal.Bridge
	Labs      *lab.Service
	Exams     *exam.Service
	Profiles  *profile.Service
	Dashboard *dashboard.Dashboard
	Classes   *class.Service
	Shares    *share.Service
	// Recordings are the terminals' recordings (nil: none is recorded,
	// and their routes list none).
	Recordings *recording.Service
	DB         Pinger
	Log        *slog.Logger
	Version    string

	CORSOrigins  []string
	MaxBodyBytes int64
	// TrustedProxies are the peers whose X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
	// MetricsToken, when set, is the bearer token /metrics requires.
	MetricsToken string
	// SecureCookies marks the session cookies Secure on every request
	// (production); otherwise only on requests that came over HTTPS.
	SecureCookies bool
	// AccessLogLevel is the level of the per-request log line (Info by default).
	AccessLogLevel slog.Level
	// UI, when set, serves the pages, /docs and their assets.
	UI UI
	// Resets is password reset by mail (nil: off, its routes answer 503).
	Resets *auth.Resets
	// Verifications is e-mail verification on registration (nil: off, its
	// routes answer 503).
	Verifications *auth.Verifications
}

// Server serves the API.
type Server struct {
	auth           *auth.Service
	lessons        *lesson.Service
	sandboxes      *sandbox.Service
	terminals      *terminal.Bridge
	labs           *lab.Service
	exams          *exam.Service
	profiles       *profile.Service
	dashboard      *dashboard.Dashboard
	resets         *auth.Resets
	verifications  *auth.Verifications
	classes        *class.Service
	shares         *share.Service
	recordings     *recording.Service
	guestPreviews  guestPreviews // guests' preview requests in progress
	db             Pinger
	log            *slog.Logger
	version        string
	corsOrigins    []string
	trustedProxies []netip.Prefix
	metricsToken   string
	secureCookies  bool
	maxBody        int64
	accessLogLevel slog.Level

	registry *prometheus.Registry
	metrics  *metrics
	logins   *loginMetric
	routes   []route
	openapi  []byte
	handler  http.Handler
}

// New builds a server and its routes.
func New(d Deps) *Server {
	s := &Server{
		auth: d.Auth, lessons: d.Lessons, sandboxes: d.Sandboxes, terminals: d.Terminals, labs: d.Labs, exams: d.Exams, profiles: d.Profiles, dashboard: d.Dashboard, classes: d.Classes, shares: d.Shares, recordings: d.Recordings, db: d.DB, log: d.Log, version: d.Version,
		corsOrigins: d.CORSOrigins, maxBody: d.MaxBodyBytes, trustedProxies: d.TrustedProxies, metricsToken: d.MetricsToken, secureCookies: d.SecureCookies, accessLogLevel: d.AccessLogLevel,
		registry: prometheus.NewRegistry(), resets: d.Resets, verifications: d.Verifications,
	}
	if s.maxBody <= 0 {
		s.maxBody = 1 << 20
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.metrics = newMetrics(s.registry)
	s.logins = newLoginMetric(s.registry)
	s.routes = s.routeTable()
	s.openapi = s.openAPIDocument()

	// routes holds every route; mux holds them too, and a catch-all that
	// asks routes why nothing matched. A request is routed once; only one
	// that matches no route is routed again.
	routes, mux := http.NewServeMux(), http.NewServeMux()
	handle := func(pattern string, h http.Handler) {
		routes.Handle(pattern, h)
		mux.Handle(pattern, h)
	}
	for _, rt := range s.routes {
		handle(rt.method+" "+rt.path, s.wrap(rt))
	}
	handle("GET /healthz", http.HandlerFunc(s.handleHealthz))
	handle("GET /readyz", http.HandlerFunc(s.handleReadyz))
	handle("GET /metrics", s.guardMetrics(promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{})))
	handle("GET /api/openapi.json", http.HandlerFunc(s.handleOpenAPI))
	if s.sandboxes != nil {
		handle("/preview/{id}/{port}/", http.HandlerFunc(s.handlePreview))
	}
	if d.UI != nil {
		for _, p := range d.UI.Patterns() {
			handle(p, d.UI)
		}
	}
	mux.Handle("/", s.jsonFallbacks(routes, d.UI))
	s.handler = s.observe(s.cors(s.limitBody(mux)))
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// jsonFallbacks answers what matches no route of routes, unknown paths
// (404) and wrong methods (405), in the contract's JSON shape instead of
// ServeMux's plain text. The one exception is a browser asking for an
// unknown page (wantsPage): ui, when set, draws its 404 page for it. It is
// counted as the "unmatched" route.
func (s *Server) jsonFallbacks(routes *http.ServeMux, ui UI) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Pattern = ""
		probe := &headerProbe{header: http.Header{}}
		h, _ := routes.Handler(r)
		h.ServeHTTP(probe, r)
		if probe.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"detail": "Method Not Allowed"})
			return
		}
		if ui != nil && pagePath(r.URL.Path) {
			// The answer depends on Accept for these paths only.
			w.Header().Add("Vary", "Accept")
			if wantsPage(r) {
				ui.ServeNotFound(w, r)
				return
			}
		}
		s.writeError(w, r, errNotFound)
	})
}

// pagePath reports whether path could be one of the interface's pages: not
// the API's, the terminal's or the assets' (their unknown paths are always
// the JSON 404, whoever asks).
func pagePath(path string) bool {
	for _, p := range []string{"/api", "/ws", "/assets", "/avatars", "/preview"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return false
		}
	}
	return true
}

// wantsPage reports whether r is a browser navigating to a page: a GET or
// HEAD whose Accept names text/html (fetch and API clients send */* or
// application/json, and keep the JSON 404).
func wantsPage(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/html") && strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// headerProbe captures what ServeMux's fallback handler would answer.
type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header         { return p.header }
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *headerProbe) WriteHeader(code int)        { p.status = code }

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": s.version})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.db.Ping(ctx); err != nil {
		s.log.WarnContext(ctx, "readiness check failed", "error", err.Error())
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"detail": "Database unavailable"})
		return
	}
	body := map[string]any{"status": "ready"}
	// Ready all the same: lessons, exams and the rest work. An operator
	// should hear of it, though.
	if s.sandboxes != nil {
		var warnings []string
		if iso := s.sandboxes.Isolation(); iso.Problem != "" {
			warnings = append(warnings, iso.Problem)
		}
		if note := s.sandboxes.MachineNotice(ctx); note != "" {
			warnings = append(warnings, note)
		}
		if len(warnings) > 0 {
			body["warnings"] = warnings
		}
	}
	writeJSON(w, http.StatusOK, body)
}

// guardMetrics requires the metrics token, when one is configured, as a
// bearer token: /metrics tells about every learner's activity.
func (s *Server) guardMetrics(next http.Handler) http.Handler {
	if s.metricsToken == "" {
		return next
	}
	want := []byte(s.metricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(bearerToken(r)), want) != 1 {
			s.writeError(w, r, errs.E(errs.Unauthenticated, "Metrics need the metrics token (TUXLAB_METRICS_TOKEN) as a bearer token"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Registry exposes the metrics registry so other parts of tuxlab can add collectors.
func (s *Server) Registry() prometheus.Registerer { return s.registry }
