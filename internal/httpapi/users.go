package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"tuxlab/internal/auth"
	"tuxlab/internal/dashboard"
	"tuxlab/internal/errs"
	"tuxlab/internal/lesson"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/stats"
)

// userResponse is a user as the API shows it: never the password hash.
type userResponse struct {
	ID        int64     `json:"id"`
	Username  string    `json:"username"`
	Email     string    `json:"email"`
	Role      auth.Role `json:"role"`
	IsActive  bool      `json:"is_active"`
	CreatedAt timestamp `json:"created_at"`
	// MFAEnabled says whether two-factor sign-in is on; never the secret.
	MFAEnabled bool `json:"mfa_enabled"`
}

func newUserResponse(u *auth.User) userResponse {
	return userResponse{ID: u.ID, Username: u.Username, Email: u.Email, Role: u.Role, IsActive: u.IsActive, CreatedAt: timestamp(u.CreatedAt),
		MFAEnabled: u.MFAEnabledAt != nil}
}

type registerRequest struct {
	Username *string `json:"username"`
	Email    *string `json:"email"`
	Password *string `json:"password"`
}

func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) error {
	if err := s.auth.RateLimitIP(s.clientIP(r)); err != nil {
		return err
	}
	var req registerRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "username", req.Username)
	requireField(&f, "email", req.Email)
	requireField(&f, "password", req.Password)
	if err := f.Err(); err != nil {
		return err
	}
	u, err := s.auth.Register(r.Context(), auth.NewUser{Username: *req.Username, Email: *req.Email, Password: *req.Password})
	if err != nil {
		return errs.In("body", err)
	}
	writeJSON(w, http.StatusCreated, newUserResponse(u))
	return nil
}

type loginRequest struct {
	Username *string `json:"username"`
	Password *string `json:"password"`
	// OTP is the second factor of an account with two-factor sign-in on: a
	// code of the authenticator app or a recovery code.
	OTP *string `json:"otp"`
}

type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
}

func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) (err error) {
	defer func() { s.logins.observe(err) }() // tuxlab_logins_total{outcome}
	if err := s.auth.RateLimitIP(s.clientIP(r)); err != nil {
		return err
	}
	cookie, err := wantsSessionCookie(r)
	if err != nil {
		return err
	}
	if cookie && !s.fromOwnPages(r) {
		return errCrossSite // nobody signs a browser in from another site
	}
	var req loginRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "username", req.Username)
	requireField(&f, "password", req.Password)
	checkCode(&f, "otp", req.OTP)
	if err := f.Err(); err != nil {
		return err
	}
	otp := ""
	if req.OTP != nil {
		otp = *req.OTP
	}
	token, err := s.auth.Login(r.Context(), s.clientIP(r), *req.Username, *req.Password, otp)
	if err != nil {
		return err
	}
	if cookie {
		s.setSessionCookies(w, r, token)
	}
	writeJSON(w, http.StatusOK, tokenResponse{AccessToken: token, TokenType: "bearer"})
	return nil
}

// meResponse is the caller as GET /api/auth/me shows it: the user, and
// whether the install holds them back until they turn two-factor sign-in on.
type meResponse struct {
	userResponse
	MFASetupRequired bool `json:"mfa_setup_required"`
}

func (s *Server) handleMe(w http.ResponseWriter, r *http.Request) error {
	u := currentUser(r)
	required, err := s.auth.MFARequiredOf(r.Context(), u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, meResponse{userResponse: newUserResponse(u), MFASetupRequired: required})
	return nil
}

// handleLogout revokes the caller's tokens: this one and every one issued
// before, the session cookie's included, and clears the session cookies.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) error {
	if err := s.auth.Logout(r.Context(), currentUser(r).ID); err != nil {
		return err
	}
	s.clearSessionCookies(w, r)
	writeJSON(w, http.StatusOK, map[string]any{"detail": "Logged out: this token and every older one are revoked"})
	return nil
}

// Pagination bounds from DECISIONS.md.
const (
	defaultPageSize = 50
	maxPageSize     = 200
)

// readPage reads page and page_size from the query.
func readPage(q *query) auth.Page {
	return auth.Page{Number: q.int("page", 1, 1, 1_000_000), Size: q.int("page_size", defaultPageSize, 1, maxPageSize)}
}

// setPageHeaders writes X-Total-Count and an RFC 8288 Link header with first,
// prev, next and last pages, keeping the request's other query parameters.
func setPageHeaders(w http.ResponseWriter, r *http.Request, p auth.Page, total int) {
	w.Header().Set("X-Total-Count", strconv.Itoa(total))
	last := max(1, (total+p.Size-1)/p.Size)
	link := func(page int, rel string) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page))
		q.Set("page_size", strconv.Itoa(p.Size))
		u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	links := link(1, "first")
	if p.Number > 1 {
		links += ", " + link(min(p.Number-1, last), "prev")
	}
	if p.Number < last {
		links += ", " + link(p.Number+1, "next")
	}
	links += ", " + link(last, "last")
	w.Header().Set("Link", links)
}

func (s *Server) handleAdminListUsers(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	page := readPage(q)
	var role auth.Role
	if v, ok := q.str("role"); ok {
		if role, ok = auth.ParseRole(v); !ok {
			q.fields.Add([]any{"query", "role"}, "Role must be one of student, instructor, admin", "enum")
		}
	}
	if err := q.err(); err != nil {
		return err
	}
	users, total, err := s.auth.ListUsers(r.Context(), role, page)
	if err != nil {
		return err
	}
	out := make([]userResponse, len(users))
	for i, u := range users {
		out[i] = newUserResponse(u)
	}
	setPageHeaders(w, r, page, total)
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) handleAdminCreateUser(w http.ResponseWriter, r *http.Request) error {
	// The admin convention is the query string; a JSON body keeps the
	// password out of URLs (and so out of proxies' access logs). A body of
	// any other type is refused (415), not ignored.
	if r.ContentLength != 0 {
		return s.adminCreateUserFromBody(w, r)
	}
	q := newQuery(r)
	n := auth.NewUser{
		Username: q.requireStr("username"),
		Email:    q.requireStr("email"),
		Password: q.requireStr("password"),
	}
	role, given := q.str("role")
	if !given {
		role = string(auth.RoleStudent)
	}
	n.Role = auth.Role(role)
	if err := q.err(); err != nil {
		return err
	}
	u, err := s.auth.CreateUser(r.Context(), n)
	if err != nil {
		return errs.In("query", err)
	}
	writeJSON(w, http.StatusCreated, newUserResponse(u))
	return nil
}

type createUserRequest struct {
	Username *string `json:"username"`
	Email    *string `json:"email"`
	Password *string `json:"password"`
	Role     *string `json:"role"`
}

func (s *Server) adminCreateUserFromBody(w http.ResponseWriter, r *http.Request) error {
	var body createUserRequest
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "username", body.Username)
	requireField(&f, "email", body.Email)
	requireField(&f, "password", body.Password)
	if err := f.Err(); err != nil {
		return err
	}
	n := auth.NewUser{Username: *body.Username, Email: *body.Email, Password: *body.Password, Role: auth.RoleStudent}
	if body.Role != nil {
		n.Role = auth.Role(*body.Role)
	}
	u, err := s.auth.CreateUser(r.Context(), n)
	if err != nil {
		return errs.In("body", err)
	}
	writeJSON(w, http.StatusCreated, newUserResponse(u))
	return nil
}

func (s *Server) handleAdminSetRole(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q := newQuery(r)
	role, ok := auth.ParseRole(q.requireStr("role"))
	if err := q.err(); err != nil {
		return err
	}
	if !ok {
		return errs.Field([]any{"query", "role"}, "Role must be one of student, instructor, admin", "enum")
	}
	u, err := s.auth.SetRole(r.Context(), id, role)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newUserResponse(u))
	return nil
}

func (s *Server) handleAdminSetActive(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q := newQuery(r)
	active := q.boolean("is_active")
	if err := q.err(); err != nil {
		return err
	}
	u, err := s.auth.SetActive(r.Context(), id, active)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newUserResponse(u))
	return nil
}

func (s *Server) handleAdminDeleteUser(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	// The user's avatar file goes too, once the row is gone.
	if err := s.profiles.DeleteUser(r.Context(), id, func(ctx context.Context) error { return s.auth.DeleteUser(ctx, id) }); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"detail": "User deleted", "id": id})
	return nil
}

// adminStats is the body of GET /api/admin/stats; later features add sections.
type adminStats struct {
	Users     auth.UserStats `json:"users"`
	Lessons   lesson.Stats   `json:"lessons"`
	Sandboxes sandbox.Stats  `json:"sandboxes"`
	Learning  learningStats  `json:"learning"`
}

type subjectStats struct {
	ID       int64  `json:"id"`
	Title    string `json:"title"`
	Attempts int    `json:"attempts"`
	Finished int    `json:"finished"`
	Passed   int    `json:"passed"`
	PassRate int    `json:"pass_rate"`
}

type themeCount struct {
	ThemeID     int64  `json:"theme_id"`
	Title       string `json:"title"`
	Completions int    `json:"completions"`
}

// learningStats is the system view of learning: who is active, sandboxes,
// exams and labs, themes.
type learningStats struct {
	ActiveUsers7d     int            `json:"active_users_7d"`
	ActiveUsers30d    int            `json:"active_users_30d"`
	SandboxesByStatus map[string]int `json:"sandboxes_by_status"`
	Exams             []subjectStats `json:"exams"`
	Labs              []subjectStats `json:"laboratories"`
	MostCompleted     []themeCount   `json:"most_completed_themes"`
	LeastCompleted    []themeCount   `json:"least_completed_themes"`
}

func newLearningStats(r *dashboard.SystemRows) learningStats {
	conv := func(in []dashboard.SubjectStats) []subjectStats {
		out := make([]subjectStats, len(in))
		for i, v := range in {
			out[i] = subjectStats(v)
		}
		return out
	}
	themes := func(in []dashboard.ThemeCount) []themeCount {
		out := make([]themeCount, len(in))
		for i, v := range in {
			out[i] = themeCount(v)
		}
		return out
	}
	return learningStats{ActiveUsers7d: r.ActiveUsers7d, ActiveUsers30d: r.ActiveUsers30d, SandboxesByStatus: r.SandboxesByStatus,
		Exams: conv(r.Exams), Labs: conv(r.Labs), MostCompleted: themes(r.MostCompleted), LeastCompleted: themes(r.LeastCompleted)}
}

func (s *Server) handleAdminStats(w http.ResponseWriter, r *http.Request) error {
	src := stats.Sources{Users: s.auth.Stats, Lessons: s.lessons.Stats, Sandboxes: s.sandboxes.Stats, Learning: s.dashboard.System}
	st, err := src.Collect(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, adminStats{Users: st.Users, Lessons: st.Lessons, Sandboxes: st.Sandboxes, Learning: newLearningStats(st.Learning)})
	return nil
}
