package httpapi

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tuxlab/internal/auth"
	"tuxlab/internal/profile"
)

// ctxKey carries a request's *requestState in its context.
type ctxKey struct{}

// requestState is what the middleware learns about a request and passes
// down: set once per request, so the request is copied for its context once.
type requestState struct {
	id   string     // the request id, sent back in X-Request-ID and logged
	user *auth.User // the authenticated caller, set by wrap on non-public routes
	// token is the caller's access token and viaCookie whether it came in
	// the session cookie (set with user).
	token     string
	viaCookie bool
}

// stateOf returns the state of the request ctx belongs to (empty outside one).
func stateOf(ctx context.Context) *requestState {
	if st, ok := ctx.Value(ctxKey{}).(*requestState); ok {
		return st
	}
	return &requestState{}
}

func requestID(ctx context.Context) string { return stateOf(ctx).id }

// requestIDHeader is X-Request-ID as net/http keys it: a name written in
// another case is canonicalised, into a new string, on every Get and Set.
const requestIDHeader = "X-Request-Id"

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// newRequestID returns 96 random bits in hex. A request id needs to be
// unique, not secret: math/rand/v2's generator (ChaCha8, seeded from the
// system's randomness) takes nanoseconds where crypto/rand's DRBG took
// about half a microsecond of every request on the real server.
func newRequestID() string {
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint32(b[8:], rand.Uint32())
	var id [24]byte
	hex.Encode(id[:], b[:])
	return string(id[:]) // one allocation, where EncodeToString makes two
}

// responseWriter records the status and size of a response for logs and metrics,
// and still lets handlers flush and hijack (the terminal's WebSocket needs that).
type responseWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack hands the connection over (WebSocket upgrades); the status becomes 101.
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("hijack not supported")
	}
	if w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return hj.Hijack()
}

// Flush sends buffered data to the client.
func (w *responseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// metrics are the Prometheus collectors of one server.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// series maps each seriesKey seen so far to its collectors. Readers load
	// the map without a lock; a new key (rare: routes × statuses) copies it
	// under mu. sync.Map hashed the key through an interface, at twice the cost.
	series atomic.Pointer[map[seriesKey]*series]
	mu     sync.Mutex
}

// seriesKey names the time series a request counts in.
type seriesKey struct {
	method, route string
	status        int
}

// series are the collectors of one seriesKey, looked up once: the vectors
// hash and lock on every WithLabelValues.
type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tuxlab_http_requests_total",
			Help: "HTTP requests by method, route pattern and status code.",
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tuxlab_http_request_duration_seconds",
			Help:    "HTTP request latency by method, route pattern and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route", "status"}),
	}
	m.series.Store(&map[seriesKey]*series{})
	reg.MustRegister(m.requests, m.duration)
	return m
}

// observe counts one request and its duration in its series.
func (m *metrics) observe(method, route string, status int, elapsed time.Duration) {
	key := seriesKey{methodLabel(method), route, status}
	ser := (*m.series.Load())[key]
	if ser == nil {
		ser = m.addSeries(key)
	}
	ser.requests.Inc()
	ser.duration.Observe(elapsed.Seconds())
}

// methodLabel is method as a metrics label: the methods tuxlab answers, and
// "other" for any other token a client sends, so that nobody can add series
// (and memory) by inventing methods. Routes and statuses are bounded already.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return method
	}
	return "other"
}

// addSeries returns key's collectors, adding them to a copy of the map.
func (m *metrics) addSeries(key seriesKey) *series {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.series.Load()
	if ser := old[key]; ser != nil {
		return ser // another request added it meanwhile
	}
	code := strconv.Itoa(key.status)
	ser := &series{
		requests: m.requests.WithLabelValues(key.method, key.route, code),
		duration: m.duration.WithLabelValues(key.method, key.route, code),
	}
	next := make(map[seriesKey]*series, len(old)+1)
	maps.Copy(next, old)
	next[key] = ser
	m.series.Store(&next)
	return ser
}

// observe wraps the whole stack: request id, panic recovery, access log, metrics.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var id string
		if v := r.Header[requestIDHeader]; len(v) > 0 && requestIDPattern.MatchString(v[0]) {
			id = v[0]
		} else {
			id = newRequestID()
		}
		x := &exchange{rw: responseWriter{ResponseWriter: w}, st: requestState{id: id}, idHeader: [1]string{id}}
		w.Header()[requestIDHeader] = x.idHeader[:]
		rw := &x.rw
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, &x.st))
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.ErrorContext(r.Context(), "panic", "request_id", id, "method", r.Method,
					"path", loggedPath(r.URL.Path), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if rw.status == 0 {
					writeJSON(rw, http.StatusInternalServerError, map[string]any{"detail": internalDetail})
				}
			}
			route := r.Pattern
			if route == "" || route == "/" { // "/" is the catch-all's, when ServeMux redirects
				route = "unmatched"
			}
			end := time.Now()
			elapsed := end.Sub(start)
			s.metrics.observe(r.Method, route, rw.status, elapsed)
			s.logRequest(r, x, route, end, elapsed)
		}()
		next.ServeHTTP(rw, r)
	})
}

// exchange is what observe keeps of one request, in one allocation: the
// writer that records the response, the state handlers read, and the
// attributes of the access line.
type exchange struct {
	rw       responseWriter
	st       requestState
	idHeader [1]string // the X-Request-ID header's values
	attrs    [7]slog.Attr
}

// logRequest writes the access log line of a request. The query string is
// never logged: admin routes carry passwords there, and the terminal carries
// its token there. The record is handed to the handler directly, as
// Logger.LogAttrs would, less the call stack walk that finds the caller: the
// access line's source is always this function. Its groups hold attributes
// in x, which belongs to this request alone.
func (s *Server) logRequest(r *http.Request, x *exchange, route string, end time.Time, elapsed time.Duration) {
	ctx := r.Context()
	h := s.log.Handler()
	if !h.Enabled(ctx, s.accessLogLevel) {
		return
	}
	req, resp := x.attrs[:4:4], x.attrs[4:]
	req[0], req[1] = slog.String("method", r.Method), slog.String("path", loggedPath(r.URL.Path))
	req[2], req[3] = slog.String("route", route), slog.String("remote", s.clientIP(r))
	resp[0], resp[1] = slog.Int("status", x.rw.status), slog.Int64("bytes", x.rw.bytes)
	resp[2] = slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000)
	rec := slog.NewRecord(end, s.accessLogLevel, "request", 0)
	rec.AddAttrs(
		slog.String("request_id", x.st.id),
		slog.Attr{Key: "request", Value: slog.GroupValue(req...)},
		slog.Attr{Key: "response", Value: slog.GroupValue(resp...)},
	)
	h.Handle(ctx, rec)
}

// cors answers preflights and marks responses for allowed origins. The
// preview's paths have rules of their own (previewCORS).
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/preview/") {
			next.ServeHTTP(w, r)
			return
		}
		origin := r.Header.Get("Origin")
		allowed := origin != "" && s.originAllowed(origin)
		if allowed {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "X-Total-Count, Link, X-Request-ID, Retry-After")
		}
		if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
			if !allowed {
				writeJSON(w, http.StatusForbidden, map[string]any{"detail": "Origin not allowed"})
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-ID")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) originAllowed(origin string) bool {
	return slices.Contains(s.corsOrigins, origin) || slices.Contains(s.corsOrigins, "*")
}

// limitBody refuses bodies over the limit: at once when Content-Length says so,
// otherwise when the handler reads past it.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := s.maxBody
		if r.Method == http.MethodPost && r.URL.Path == "/api/profile/avatar" {
			limit = max(limit, profile.MaxAvatarBytes+multipartSlack) // an image, not JSON
		}
		if r.ContentLength > limit {
			s.writeError(w, r, errBodyTooLarge)
			return
		}
		if r.Body != http.NoBody { // most GETs: nothing to limit
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		next.ServeHTTP(w, r)
	})
}

// clientIP is the address of the client: the peer, or, when the peer is a
// trusted proxy, the nearest address in X-Forwarded-For that is not one
// (read from the right, since a client can write anything on the left).
// Without trusted proxies X-Forwarded-For is ignored: anyone could forge it.
func (s *Server) clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if !s.trusted(host) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if _, err := netip.ParseAddr(hop); err != nil {
			return host // a malformed chain: trust only what we saw
		}
		if !s.trusted(hop) {
			return hop
		}
		host = hop
	}
	return host
}

// trusted reports whether addr is one of the configured proxies.
func (s *Server) trusted(addr string) bool {
	if len(s.trustedProxies) == 0 {
		return false
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range s.trustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
