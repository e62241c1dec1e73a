package httpapi

import (
	"net"
	"net/http"
	"strings"

	"tuxlab/internal/errs"
)

// The browser session (docs/web.md): the access token in an HttpOnly
// cookie, and a CSRF proof derived from it in a cookie the page can read.
const (
	// sessionCookie carries the access token; scripts cannot read it.
	sessionCookie = "tuxlab_session"
	// csrfCookie carries the token's CSRF proof, for the page to send back
	// in csrfHeader with every unsafe request.
	csrfCookie = "tuxlab_csrf"
	csrfHeader = "X-CSRF-Token"
	// sessionHeader, set to "cookie" on a login, asks for the session cookies.
	sessionHeader = "X-Tuxlab-Session"
)

var (
	errCSRF         = errs.E(errs.Forbidden, "CSRF check failed: send the X-CSRF-Token header with the value of the tuxlab_csrf cookie")
	errCrossSite    = errs.E(errs.Forbidden, "Cross-site request refused: the session cookie works only from this site's own pages")
	errOriginDenied = errs.E(errs.Forbidden, "Origin not allowed")
)

// credentials are what a request authenticates with.
type credentials struct {
	token  string
	cookie bool // the token came from the session cookie
}

// credentialsOf finds a request's token: an "Authorization: Bearer" header;
// on a socket route the token query parameter (browsers cannot set headers
// on a WebSocket, and an explicit token wins over the ambient cookie); else
// the session cookie. A request that names a credential is judged on it:
// an invalid bearer token does not fall back to the cookie.
func credentialsOf(r *http.Request, socketRoute bool) credentials {
	if r.Header.Get("Authorization") != "" {
		return credentials{token: bearerToken(r)}
	}
	if socketRoute {
		if t := r.URL.Query().Get("token"); t != "" { // "token=" names nothing
			return credentials{token: t}
		}
	}
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		return credentials{token: c.Value, cookie: true}
	}
	return credentials{}
}

// unsafeMethod reports whether method may change state (RFC 9110 section 9.2.1).
func unsafeMethod(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return true
}

// checkCookieRequest is the CSRF defence of a request authenticated by the
// session cookie, which a browser attaches by itself: the request must come
// from this site's own pages (its Origin, or Sec-Fetch-Site when a browser
// sends no Origin), a WebSocket handshake must name its Origin (every
// browser does), and an unsafe method must carry the CSRF proof of the
// token the cookie holds.
func (s *Server) checkCookieRequest(r *http.Request, token string, socketRoute bool) error {
	if !s.fromOwnPages(r) || socketRoute && r.Header.Get("Origin") == "" {
		return errCrossSite
	}
	if unsafeMethod(r.Method) && !s.auth.CheckCSRFProof(token, r.Header.Get(csrfHeader)) {
		return errCSRF
	}
	return nil
}

// fromOwnPages reports whether r may come with the session cookie: its Origin
// is this site or one listed in TUXLAB_CORS_ORIGINS; without an Origin, a
// browser does not say Sec-Fetch-Site: cross-site.
func (s *Server) fromOwnPages(r *http.Request) bool {
	if origin := r.Header.Get("Origin"); origin != "" {
		return s.sameOrigin(r, origin) || s.originListed(origin)
	}
	return r.Header.Get("Sec-Fetch-Site") != "cross-site"
}

// originListed reports whether origin is named in TUXLAB_CORS_ORIGINS. The
// wildcard "*" lets any site call the API with a bearer token it holds, but
// never with the learner's cookie.
func (s *Server) originListed(origin string) bool {
	for _, o := range s.corsOrigins {
		if o != "*" && o == origin {
			return true
		}
	}
	return false
}

// checkSocketOrigin refuses a WebSocket handshake (or plain request) to a
// socket route from a page of a site that is neither this one nor allowed.
func (s *Server) checkSocketOrigin(r *http.Request) error {
	if origin := r.Header.Get("Origin"); origin != "" && !s.sameOrigin(r, origin) && !s.originAllowed(origin) {
		return errOriginDenied
	}
	return nil
}

// authenticate runs the route's access rule on r: it finds the credentials,
// checks the token as auth.Service.Authenticate does, applies the CSRF
// defence to a cookie, the admin rule and the install's two-factor rule
// (mfaHoldsBack), and records the caller and its
// token in the request's state.
func (s *Server) authenticate(r *http.Request, rt route) (*http.Request, error) {
	socketRoute := rt.access == socket
	if socketRoute {
		if err := s.checkSocketOrigin(r); err != nil {
			return r, err
		}
	}
	cred := credentialsOf(r, socketRoute)
	u, err := s.auth.Authenticate(r.Context(), cred.token)
	if err != nil {
		return r, err
	}
	if cred.cookie {
		if err := s.checkCookieRequest(r, cred.token, socketRoute); err != nil {
			return r, err
		}
	}
	if err := rt.access.mayCall(u.Role); err != nil {
		return r, err
	}
	if err := s.mfaHoldsBack(r, rt, u); err != nil {
		return r, err
	}
	st, r := requestStateOf(r)
	st.user, st.token, st.viaCookie = u, cred.token, cred.cookie
	return r, nil
}

// setSessionCookies gives the browser its session: token in the HttpOnly
// session cookie and its CSRF proof in a cookie the page reads, both
// SameSite=Strict for the whole site and living as long as the token.
func (s *Server) setSessionCookies(w http.ResponseWriter, r *http.Request, token string) {
	age := int(s.auth.TokenTTL().Seconds())
	http.SetCookie(w, s.cookie(r, sessionCookie, token, age, true))
	http.SetCookie(w, s.cookie(r, csrfCookie, s.auth.CSRFProof(token), age, false))
}

// clearSessionCookies tells the browser to forget the session (Max-Age=0).
func (s *Server) clearSessionCookies(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, s.cookie(r, sessionCookie, "", -1, true))
	http.SetCookie(w, s.cookie(r, csrfCookie, "", -1, false))
}

// cookie is one of the session's cookies; maxAge < 0 deletes it.
func (s *Server) cookie(r *http.Request, name, value string, maxAge int, httpOnly bool) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: httpOnly,
		Secure: s.secureRequest(r), SameSite: http.SameSiteStrictMode}
}

// secureRequest reports whether the session cookies must be Secure: always
// in production (TUXLAB_ENV=production), and whenever the request came over
// HTTPS, directly or through a trusted proxy (X-Forwarded-Proto). Browsers
// refuse a Secure cookie from plain http://127.0.0.1, so development over
// HTTP gets cookies without it.
func (s *Server) secureRequest(r *http.Request) bool {
	if s.secureCookies || r.TLS != nil {
		return true
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return s.trusted(host) && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// wantsSessionCookie reads a login's X-Tuxlab-Session header: "cookie" asks
// for the session cookies beside the token in the body; no header asks for
// the token alone; anything else is a 422.
func wantsSessionCookie(r *http.Request) (bool, error) {
	v, ok := r.Header[sessionHeader]
	if !ok {
		return false, nil
	}
	if len(v) == 1 && strings.EqualFold(strings.TrimSpace(v[0]), "cookie") {
		return true, nil
	}
	return false, errs.Field([]any{"header", sessionHeader}, `Input should be "cookie"`, "literal_error")
}
