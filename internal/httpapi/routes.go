package httpapi

import (
	"context"
	"net/http"
	"strings"

	"tuxlab/internal/actor"
	"tuxlab/internal/auth"
	"tuxlab/internal/class"
)

// access says who may call a route.
type access int

const (
	public access = iota // anyone
	user                 // any active user with a valid token
	admin                // active admins only
	// author is active instructors and admins: the authoring routes. Which
	// items an instructor may change is the domain's rule (their own).
	author
	// socket is user for a WebSocket route: the token may also come in the
	// query string (browsers cannot set headers on a WebSocket), any Origin
	// must be this site or an allowed one, and a refused WebSocket upgrade
	// is told after the upgrade, where a browser can read it.
	socket
	// instructor is user for instructors and admins only (classes).
	instructor
	// mfaSetup is user, and also open to an admin or instructor whom the
	// install requires to turn two-factor sign-in on first (every other
	// route answers them 403 auth.ErrMFASetupRequired): what it takes to see
	// who they are, turn it on, or sign out.
	mfaSetup
)

// handler serves one route; an error it returns goes through writeError.
type handler func(w http.ResponseWriter, r *http.Request) error

// route is one entry of the table: what the server runs and what the OpenAPI
// document says about it, kept side by side so neither can drift.
type route struct {
	method string
	path   string
	access access
	handle handler
	doc    op
}

// routeTable lists every API route tuxlab serves.
func (s *Server) routeTable() []route {
	return append(append(append(append(append(append(append(s.coreRoutes(), s.profileRoutes()...), s.dashboardRoutes()...), s.accountRoutes()...), s.classRoutes()...), s.mfaRoutes()...), s.shareRoutes()...), s.recordingRoutes()...)
}

// coreRoutes are the routes of auth, lessons, sandboxes, exams, labs and admin.
func (s *Server) coreRoutes() []route {
	examAdmin, labAdmin := s.examAdmin(), s.labAdmin()
	return []route{
		// Auth
		{"POST", "/api/auth/register", public, s.handleRegister, docRegister},
		{"POST", "/api/auth/login", public, s.handleLogin, docLogin},
		{"GET", "/api/auth/me", mfaSetup, s.handleMe, docMe},
		{"POST", "/api/auth/logout", mfaSetup, s.handleLogout, docLogout},

		// Lessons
		{"GET", "/api/lessons/modules", user, s.handleModules, docModules},
		{"GET", "/api/lessons/themes/{theme_id}", user, s.handleTheme, docTheme},
		{"GET", "/api/lessons/themes/{theme_id}/content", user, s.handleThemeContent, docThemeContent},
		{"POST", "/api/lessons/themes/{theme_id}/complete", user, s.handleThemeComplete, docThemeComplete},

		// Sandboxes and the terminal
		{"GET", "/api/sandbox-templates", public, s.handleTemplates, docTemplates},
		{"POST", "/api/containers/create", user, s.handleCreateContainer, docCreateContainer},
		{"GET", "/api/containers/sandbox", user, s.handleListContainers, docListContainers},
		{"GET", "/api/containers/{id}", user, s.containerAction(s.handleGetContainer), docGetContainer},
		{"POST", "/api/containers/{id}/start", user, s.containerAction(s.handleStartContainer), docStartContainer},
		{"POST", "/api/containers/{id}/stop", user, s.containerAction(s.handleStopContainer), docStopContainer},
		{"DELETE", "/api/containers/{id}", user, s.handleDeleteContainer, docDeleteContainer},
		{"GET", "/ws/terminal/{container_id}", socket, s.handleTerminal, docTerminal},
		{"GET", "/ws/containers/{id}/port/{port}", socket, s.handlePortForward, docPortForward},

		// Exams
		{"GET", "/api/exams", public, s.handleExams, docExams},
		{"GET", "/api/exams/{id}", public, s.handleExam, docExam},
		{"POST", "/api/exams/{id}/start", user, s.handleExamStart, docExamStart},
		{"POST", "/api/exams/{id}/submit", user, s.handleExamSubmit, docExamSubmit},
		{"GET", "/api/exams/attempts/{id}", user, s.handleExamAttempt, docExamAttempt},
		{"GET", "/api/exams/attempts/{id}/results", user, s.handleExamResults, docExamResults},
		{"PUT", "/api/exams/attempts/{id}/draft", user, s.handleExamDraft, docExamDraft},

		// Laboratories
		{"GET", "/api/laboratories", public, s.handleLabs, docLabs},
		{"GET", "/api/laboratories/{id}", public, s.handleLab, docLab},
		{"GET", "/api/laboratories/section/{section_id}/laboratory", user, s.handleSectionLab, docSectionLab},
		{"POST", "/api/laboratories/{id}/start", user, s.labAction(http.StatusCreated, s.handleLabStart), docLabStart},
		{"POST", "/api/laboratories/{id}/check", user, s.labAction(http.StatusOK, s.handleLabCheck), docLabCheck},
		{"POST", "/api/laboratories/{id}/submit", user, s.labAction(http.StatusOK, s.handleLabSubmit), docLabSubmit},
		{"GET", "/api/laboratories/attempts/{id}/results", user, s.handleLabResults, docLabResults},

		// Progress
		{"GET", "/api/progress", user, s.handleProgress, docProgress},

		// Admin: exams and laboratories
		{"GET", "/api/admin/exams", author, examAdmin.list, docAdminExams},
		{"POST", "/api/admin/exams", author, examAdmin.post, docAdminCreateExam},
		{"GET", "/api/admin/exams/{id}", author, examAdmin.get, docAdminExam},
		{"PUT", "/api/admin/exams/{id}", author, examAdmin.put, docAdminUpdateExam},
		{"DELETE", "/api/admin/exams/{id}", author, examAdmin.delete, docAdminDeleteExam},
		{"GET", "/api/admin/laboratories", author, labAdmin.list, docAdminLabs},
		{"POST", "/api/admin/laboratories", author, labAdmin.post, docAdminCreateLab},
		{"GET", "/api/admin/laboratories/{id}", author, labAdmin.get, docAdminLab},
		{"PUT", "/api/admin/laboratories/{id}", author, labAdmin.put, docAdminUpdateLab},
		{"DELETE", "/api/admin/laboratories/{id}", author, labAdmin.delete, docAdminDeleteLab},

		// Admin: sandboxes
		{"GET", "/api/admin/containers", admin, s.handleAdminListContainers, docAdminListContainers},
		{"POST", "/api/admin/sandbox-templates", admin, s.handleAdminCreateTemplate, docAdminCreateTemplate},
		{"PUT", "/api/admin/sandbox-templates/{id}", admin, s.handleAdminUpdateTemplate, docAdminUpdateTemplate},
		{"DELETE", "/api/admin/sandbox-templates/{id}", admin, s.handleAdminDeleteTemplate, docAdminDeleteTemplate},

		// Admin: lesson authoring
		{"POST", "/api/admin/lessons/modules", author, s.handleAdminCreateModule, docAdminCreateModule},
		{"PUT", "/api/admin/lessons/modules/{module_id}", author, s.handleAdminUpdateModule, docAdminUpdateModule},
		{"DELETE", "/api/admin/lessons/modules/{module_id}", author, s.handleAdminDeleteModule, docAdminDeleteModule},
		{"PUT", "/api/admin/lessons/order", author, s.handleAdminReorderModules, docAdminReorderModules},
		{"PUT", "/api/admin/lessons/modules/{module_id}/order", author, s.handleAdminReorderThemes, docAdminReorderThemes},
		{"POST", "/api/admin/lessons/themes", author, s.handleAdminCreateTheme, docAdminCreateTheme},
		{"PUT", "/api/admin/lessons/themes/{theme_id}", author, s.handleAdminUpdateTheme, docAdminUpdateTheme},
		{"PUT", "/api/admin/lessons/themes/{theme_id}/content", author, s.handleAdminSetThemeContent, docAdminSetThemeContent},
		{"DELETE", "/api/admin/lessons/themes/{theme_id}", author, s.handleAdminDeleteTheme, docAdminDeleteTheme},

		// Admin: users and statistics
		{"GET", "/api/admin/users", admin, s.handleAdminListUsers, docAdminListUsers},
		{"POST", "/api/admin/users", admin, s.handleAdminCreateUser, docAdminCreateUser},
		{"PUT", "/api/admin/users/{id}/role", admin, s.handleAdminSetRole, docAdminSetRole},
		{"PUT", "/api/admin/users/{id}/active", admin, s.handleAdminSetActive, docAdminSetActive},
		{"DELETE", "/api/admin/users/{id}", admin, s.handleAdminDeleteUser, docAdminDeleteUser},
		{"GET", "/api/admin/stats", admin, s.handleAdminStats, docAdminStats},
	}
}

// wrap applies the route's access rule (the contract's per-request checks in
// order, see authenticate) and turns a returned error into the contract's
// error shape.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rt.access != public {
			var err error
			if r, err = s.authenticate(r, rt); err != nil {
				if rt.access == socket && isWebSocketUpgrade(r) {
					s.refuseUpgrade(w, r, err)
					return
				}
				s.writeError(w, r, err)
				return
			}
		}
		if err := rt.handle(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// requestStateOf returns r's state, and r with a state in its context when
// it was served without observe, as some tests do.
func requestStateOf(r *http.Request) (*requestState, *http.Request) {
	if st, ok := r.Context().Value(ctxKey{}).(*requestState); ok {
		return st, r
	}
	st := &requestState{}
	return st, r.WithContext(context.WithValue(r.Context(), ctxKey{}, st))
}

// bearerToken returns the token of an "Authorization: Bearer" header, or "".
func bearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// accessName is how the OpenAPI document names an access level.
func (a access) accessName() string {
	switch a {
	case public:
		return "public"
	case admin:
		return "admin"
	case author:
		return "author"
	case instructor:
		return "instructor"
	}
	return "user"
}

// mayCall reports whether a user of role passes the route's role gate.
func (a access) mayCall(role actor.Role) error {
	switch {
	case a == admin && role != actor.Admin:
		return auth.ErrAdminRequired
	case a == author && !(actor.Actor{Role: role}).CanAuthor():
		return actor.ErrAuthorRequired
	case a == instructor && role != actor.Admin && role != actor.Instructor:
		return class.ErrInstructorRequired
	}
	return nil
}

// currentUser is the authenticated caller; wrap guarantees it on non-public routes.
func currentUser(r *http.Request) *auth.User {
	return stateOf(r.Context()).user
}
