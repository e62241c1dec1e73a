package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"tuxlab/internal/actor"
	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/share"
)

// The port preview (docs/preview.md): /preview/{id}/{port}/... is an HTTP
// reverse proxy to a TCP port on the loopback interface of the caller's
// sandbox, reached through the engine's exec (sandbox.DialPort), so the
// sandbox's network stays closed.
//
// A previewed page is the learner's code served from tuxlab's own origin, so
// every proxied response carries "Content-Security-Policy: sandbox": the
// browser runs it in an opaque origin, where it gets no tuxlab cookie and
// cannot read tuxlab's API. Its own requests then carry no session cookie
// either (the cookie is SameSite=Strict and the opaque origin is another
// site), so the preview's URL carries a ticket instead: the owner's first
// request, authenticated as every page is, is redirected to
// /preview/{id}/{port}/~TICKET/..., and the page's relative links stay under
// that prefix.

// previewCSP is the policy added to every proxied response.
const previewCSP = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"

// previewHeaderTimeout bounds the wait for the service's response headers.
const previewHeaderTimeout = 30 * time.Second

// previewDropped are response headers of the service that would act on
// tuxlab's whole origin, not only on the preview, and are left out.
var previewDropped = []string{"Strict-Transport-Security", "Clear-Site-Data", "Alt-Svc", "Public-Key-Pins"}

const errNothingListens = "Nothing answered on port %d in the sandbox: start a service listening on it (on 127.0.0.1 or every address)"

// handlePreview serves /preview/{id}/{port}/...: any method, any path below.
func (s *Server) handlePreview(w http.ResponseWriter, r *http.Request) {
	if err := s.servePreview(w, r); err != nil {
		s.writeError(w, r, err)
	}
}

// previewTarget is what a preview request names: the sandbox, its port, the
// ticket in its path (if any) and the path to ask the service for.
type previewTarget struct {
	id     int64
	port   int
	ticket string
	path   string // the escaped path below the prefix, starting with "/"
}

// prefix is the path the preview's pages live under, with ticket.
func (p previewTarget) prefix(ticket string) string {
	return fmt.Sprintf("/preview/%d/%d/~%s", p.id, p.port, ticket)
}

// parsePreview reads a preview request's path.
func parsePreview(r *http.Request) (previewTarget, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return previewTarget{}, err
	}
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || port < 1 || port > 65535 {
		return previewTarget{}, errs.Field([]any{"path", "port"}, "Input should be a TCP port from 1 to 65535", "int_range")
	}
	p := previewTarget{id: id, port: port}
	// The escaped path, so that an encoded slash in a file name survives.
	rest := r.URL.EscapedPath()
	for range 4 { // "", "preview", id, port
		_, rest, _ = strings.Cut(rest, "/")
	}
	if t, ok := strings.CutPrefix(rest, "~"); ok {
		p.ticket, rest, _ = strings.Cut(t, "/")
	}
	p.path = "/" + rest
	return p, nil
}

// servePreview checks who asks and proxies, or redirects the owner (or a
// guest with a share's token) to the preview's ticketed prefix.
func (s *Server) servePreview(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePreview(r)
	if err != nil {
		return err
	}
	if p.ticket != "" {
		if uid, shareID, ok := s.auth.CheckPreviewTicket(p.ticket, p.id, p.port); ok {
			if isPreflight(r) {
				answerPreflight(w, r)
				return nil
			}
			// A browser that also sends a session (a navigation) must be
			// the ticket's user: a link passed to another learner opens
			// nothing for them.
			if u := s.sessionUser(r); u != 0 && u != uid {
				return sandbox.ErrContainerNotFound
			}
			c, sh, err := s.previewable(r.Context(), actor.User(uid), p.id, shareID)
			if err != nil {
				return err
			}
			if sh != nil {
				ctx, stop := s.guardGuestPreview(r.Context(), sh)
				defer stop()
				r = r.WithContext(ctx)
			}
			s.proxyPreview(w, r, c, p)
			return nil
		}
	}
	// No ticket, or one that no longer opens it: the caller's own session,
	// and a guest's share token.
	r, err = s.authenticate(r, route{access: user})
	if err != nil {
		return err
	}
	a := callerOf(r)
	shareID := int64(0)
	_, _, err = s.previewable(r.Context(), a, p.id, 0)
	if query := r.URL.Query(); errs.Is(err, errs.NotFound) && query.Has(previewShareParam) {
		// Not the owner's (whose query passes as it is): a guest's token.
		if shareID, err = s.previewShare(r.Context(), p.id, query.Get(previewShareParam)); err == nil {
			_, _, err = s.previewable(r.Context(), a, p.id, shareID)
		}
		// The token has done its work: it stays out of the ticketed URL,
		// and so out of the service's requests.
		query.Del(previewShareParam)
		r.URL.RawQuery = query.Encode()
	}
	if err != nil {
		return err
	}
	target := p.prefix(s.auth.PreviewTicket(a.UserID, shareID, p.id, p.port)) + p.path
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	code := http.StatusFound
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		code = http.StatusTemporaryRedirect
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, target, code)
	return nil
}

// previewShareParam is the query parameter of a guest's first preview
// request: the token of a share of the sandbox (the watch page's link).
// tuxlab never logs query strings.
const previewShareParam = "share"

// previewShare returns the id of the live share of sandbox id that a
// guest's token names: an unknown, ended or expired token is 404, and a
// live share of another sandbox the 404 of a sandbox that is not the
// caller's.
func (s *Server) previewShare(ctx context.Context, id int64, token string) (int64, error) {
	sh, err := s.shares.ByToken(ctx, token)
	if err != nil {
		return 0, err
	}
	if sh.ContainerID != id {
		return 0, sandbox.ErrContainerNotFound
	}
	return sh.ID, nil
}

// isPreflight reports whether r is a CORS preflight.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != ""
}

// answerPreflight lets a previewed page's own requests through CORS (its
// origin is opaque): any method and headers it asks for, without
// credentials. The request that follows still needs the ticket.
func answerPreflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", r.Header.Get("Access-Control-Request-Method"))
	if rh := r.Header.Get("Access-Control-Request-Headers"); rh != "" {
		h.Set("Access-Control-Allow-Headers", rh)
	}
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// sessionUser is the user of a valid session cookie on r, or 0.
func (s *Server) sessionUser(r *http.Request) int64 {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return 0
	}
	u, err := s.auth.Authenticate(r.Context(), c.Value)
	if err != nil {
		return 0
	}
	return u.ID
}

// previewable returns sandbox id, running, if actor a may preview it: as
// its owner (shareID 0; an admin too gets the 404 of another user's
// sandbox), or as a guest through shareID, which must still be a live share
// of that sandbox (share.Service.Live, which refuses an exam's sandbox too).
// Each ticketed request asks again, so ending or expiring a share ends its
// guests' preview at once. The share is returned for a guest, nil for the
// owner.
func (s *Server) previewable(ctx context.Context, a actor.Actor, id, shareID int64) (*sandbox.Container, *share.Share, error) {
	owner := a
	var sh *share.Share
	if shareID != 0 {
		var err error
		sh, err = s.shares.Live(ctx, id, shareID)
		if errs.Is(err, errs.NotFound) {
			return nil, nil, share.ErrLinkNotFound
		}
		if err != nil {
			return nil, nil, err
		}
		// The guest looks at the sandbox as its owner would.
		owner = actor.User(sh.UserID)
	}
	c, err := s.sandboxes.Get(ctx, owner, id)
	if err != nil {
		return nil, nil, err
	}
	if c.UserID != owner.UserID {
		return nil, nil, sandbox.ErrContainerNotFound
	}
	if c.Status != sandbox.StatusRunning {
		return nil, nil, sandbox.ErrNotRunning
	}
	return c, sh, nil
}

// proxyPreview passes r to port p.port of sandbox c, one connection (one
// exec in the sandbox) per request, WebSocket upgrades included.
func (s *Server) proxyPreview(w http.ResponseWriter, r *http.Request, c *sandbox.Container, p previewTarget) {
	prefix := p.prefix(p.ticket)
	host := "127.0.0.1:" + strconv.Itoa(p.port)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = &url.URL{Scheme: "http", Host: host, RawQuery: pr.In.URL.RawQuery}
			if u, err := url.Parse(p.path); err == nil {
				pr.Out.URL.Path, pr.Out.URL.RawPath = u.Path, u.RawPath
			}
			pr.Out.Host = host
			pr.SetXForwarded()
			pr.Out.Header.Set("X-Forwarded-Prefix", prefix)
			scrubPreviewRequest(pr.Out.Header)
		},
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return s.sandboxes.DialPort(ctx, c, p.port)
			},
			DisableKeepAlives:      true, // a connection is a process in the sandbox: none left idle
			DisableCompression:     true,
			ResponseHeaderTimeout:  previewHeaderTimeout,
			MaxResponseHeaderBytes: 64 << 10,
		},
		FlushInterval:  100 * time.Millisecond,
		ModifyResponse: func(res *http.Response) error { rewritePreviewResponse(res.Header, prefix, p.port); return nil },
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var e *errs.Error
			if errors.As(err, &e) {
				s.writeError(w, r, e)
				return
			}
			if r.Context().Err() != nil {
				return // the client went away
			}
			writeJSON(w, http.StatusBadGateway, map[string]any{"detail": fmt.Sprintf(errNothingListens, p.port)})
		},
	}
	rp.ServeHTTP(w, r)
}

// scrubPreviewRequest keeps tuxlab's credentials out of the sandbox: the
// Authorization header, the CSRF header and tuxlab's own cookies (the
// service's cookies pass).
func scrubPreviewRequest(h http.Header) {
	h.Del("Authorization")
	h.Del(csrfHeader)
	cookies := h.Values("Cookie")
	h.Del("Cookie")
	var kept []string
	for _, line := range cookies {
		for part := range strings.SplitSeq(line, ";") {
			name, _, _ := strings.Cut(strings.TrimSpace(part), "=")
			if name == "" || isTuxlabCookie(name) {
				continue
			}
			kept = append(kept, strings.TrimSpace(part))
		}
	}
	if len(kept) > 0 {
		h.Set("Cookie", strings.Join(kept, "; "))
	}
}

// isTuxlabCookie reports whether a cookie name is one of tuxlab's.
func isTuxlabCookie(name string) bool {
	return name == sessionCookie || name == csrfCookie || strings.HasPrefix(name, "tuxlab_")
}

// rewritePreviewResponse keeps a service's answer under the preview's prefix
// and in its opaque origin: the sandbox policy is added, a redirect to a
// path of the service (or to its own address) is put under the prefix, its
// cookies are scoped to the prefix (a cookie named as tuxlab's is dropped),
// and headers that would act on tuxlab's whole origin are left out.
func rewritePreviewResponse(h http.Header, prefix string, port int) {
	h.Add("Content-Security-Policy", previewCSP)
	// The page's own requests come from its opaque origin ("null"), so
	// reading their answers needs CORS. Without credentials ("*"): the
	// ticket in the URL is what lets them in.
	if h.Get("Access-Control-Allow-Origin") == "" {
		h.Set("Access-Control-Allow-Origin", "*")
	}
	h.Del("Access-Control-Allow-Credentials")
	h.Set("Referrer-Policy", "no-referrer") // the ticket is in the URL
	h.Set("X-Content-Type-Options", "nosniff")
	for _, name := range previewDropped {
		h.Del(name)
	}
	if loc := h.Get("Location"); loc != "" {
		h.Set("Location", previewLocation(loc, prefix, port))
	}
	cookies := h.Values("Set-Cookie")
	h.Del("Set-Cookie")
	for _, line := range cookies {
		c, err := http.ParseSetCookie(line)
		if err != nil || isTuxlabCookie(c.Name) {
			continue
		}
		c.Domain = ""
		c.Path = prefix + "/" + strings.TrimPrefix(c.Path, "/")
		if v := c.String(); v != "" {
			h.Add("Set-Cookie", v)
		}
	}
}

// previewLocation is a redirect's target under the preview's prefix: a path
// of the service ("/login"), or a URL of its own address
// (http://127.0.0.1:PORT/login, http://localhost:PORT/login); a relative one
// stays as it is (it resolves under the prefix), and another site's URL too.
func previewLocation(loc, prefix string, port int) string {
	if strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//") {
		return prefix + loc
	}
	u, err := url.Parse(loc)
	if err != nil || !u.IsAbs() {
		return loc
	}
	switch u.Host {
	case "127.0.0.1:" + strconv.Itoa(port), "localhost:" + strconv.Itoa(port):
	case "127.0.0.1", "localhost":
		if port != 80 {
			return loc
		}
	default:
		return loc
	}
	out := prefix + u.EscapedPath()
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	if u.Fragment != "" {
		out += "#" + u.EscapedFragment()
	}
	return out
}

// handlePortForward serves /ws/containers/{id}/port/{port}: one TCP
// connection to port of the caller's sandbox, its bytes in binary frames
// both ways (tuxlab port-forward opens one per local connection). A failure
// before the connection opens is told after the upgrade, as the terminal
// does; the socket closes normally (1000) when the service closes its side.
func (s *Server) handlePortForward(w http.ResponseWriter, r *http.Request) error {
	if !isWebSocketUpgrade(r) {
		if _, _, err := s.admitPortForward(r); err != nil {
			return err
		}
		return errUpgradeRequired
	}
	ws, err := s.acceptTerminal(w, r)
	if err != nil {
		return nil // Accept has answered the client
	}
	c, port, err := s.admitPortForward(r)
	var conn net.Conn
	if err == nil {
		conn, err = s.sandboxes.DialPort(r.Context(), c, port)
	}
	if err != nil {
		s.refuseTerminal(r, ws, err)
		return nil
	}
	defer conn.Close()
	ws.SetReadLimit(maxForwardFrame)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	wsConn := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	go func() {
		io.Copy(conn, wsConn) // the client's bytes, until it goes
		cancel()
		conn.Close()
	}()
	io.Copy(wsConn, conn) // the service's bytes, until it closes its side
	ws.Close(websocket.StatusNormalClosure, "")
	return nil
}

// maxForwardFrame is the largest frame a port-forward client may send.
const maxForwardFrame = 1 << 20

// admitPortForward checks a port-forward request: the caller's own running
// sandbox and a port from 1 to 65535.
func (s *Server) admitPortForward(r *http.Request) (*sandbox.Container, int, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, 0, err
	}
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || port < 1 || port > 65535 {
		return nil, 0, errs.Field([]any{"path", "port"}, "Input should be a TCP port from 1 to 65535", "int_range")
	}
	// The owner's only (share 0), unlike the preview: a raw TCP pipe to
	// any port is more than a look at a page (docs/preview.md).
	c, _, err := s.previewable(r.Context(), callerOf(r), id, 0)
	return c, port, err
}

// loggedPath is path as the access log writes it: a preview ticket (as good
// as the owner's access to the preview for an hour) is left out.
func loggedPath(path string) string {
	rest, ok := strings.CutPrefix(path, "/preview/")
	if !ok {
		return path
	}
	i := strings.Index(rest, "/~")
	if i < 0 {
		return path
	}
	head, tail := rest[:i+2], rest[i+2:]
	if j := strings.IndexByte(tail, '/'); j >= 0 {
		return "/preview/" + head + "TICKET" + tail[j:]
	}
	return "/preview/" + head + "TICKET"
}
