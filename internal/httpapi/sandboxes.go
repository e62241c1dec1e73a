package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"

	"tuxlab/internal/actor"
	"tuxlab/internal/auth"
	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/terminal"
)

type limitsResponse struct {
	MemoryMB  int     `json:"memory_mb"`
	CPUs      float64 `json:"cpus"`
	CPUMillis int     `json:"cpu_millis"`
	PidsLimit int     `json:"pids_limit"`
	DiskMB    int     `json:"disk_mb"`
}

type templateResponse struct {
	ID              int64          `json:"id"`
	Name            string         `json:"name"`
	Description     string         `json:"description"`
	Kind            sandbox.Kind   `json:"kind"`
	Image           string         `json:"image"`
	Limits          limitsResponse `json:"limits"`
	Network         bool           `json:"network"`
	Runtime         string         `json:"runtime"`
	User            string         `json:"user"`
	Shell           []string       `json:"shell"`
	CapAdd          []string       `json:"cap_add"`
	NoNewPrivileges bool           `json:"no_new_privileges"`
	ExtraDisksMB    []int          `json:"extra_disks_mb"`
}

func newTemplateResponse(t *sandbox.Template) templateResponse {
	disks := t.ExtraDisksMB
	if disks == nil {
		disks = []int{}
	}
	return templateResponse{ID: t.ID, Name: t.Name, Description: t.Description, Kind: t.Kind, Image: t.Image, ExtraDisksMB: disks,
		Limits:  limitsResponse{MemoryMB: t.MemoryMB, CPUs: float64(t.CPUMillis) / 1000, CPUMillis: t.CPUMillis, PidsLimit: t.PidsLimit, DiskMB: t.DiskMB},
		Network: t.Network, Runtime: t.Runtime, User: t.User, Shell: t.Shell, CapAdd: t.CapAdd, NoNewPrivileges: t.NoNewPrivileges}
}

type containerResponse struct {
	ID             int64        `json:"id"`
	Name           string       `json:"name"`
	TemplateID     int64        `json:"template_id"`
	Kind           sandbox.Kind `json:"kind"`
	UserID         int64        `json:"user_id"`
	Status         string       `json:"status"`
	StatusDetail   string       `json:"status_detail"`
	CreatedAt      timestamp    `json:"created_at"`
	StartedAt      *timestamp   `json:"started_at"`
	StoppedAt      *timestamp   `json:"stopped_at"`
	ExpiresAt      timestamp    `json:"expires_at"`
	LastActivityAt timestamp    `json:"last_activity_at"`
	IdleStopAt     *timestamp   `json:"idle_stop_at"`
	TerminalURL    string       `json:"terminal_url"`
}

func (s *Server) newContainerResponse(c *sandbox.Container) containerResponse {
	return containerResponse{ID: c.ID, Name: c.Name, TemplateID: c.TemplateID, Kind: c.Kind, UserID: c.UserID, Status: string(c.Status),
		StatusDetail: c.StatusDetail, CreatedAt: timestamp(c.CreatedAt), StartedAt: optTime(c.StartedAt), StoppedAt: optTime(c.StoppedAt),
		ExpiresAt: timestamp(c.ExpiresAt), LastActivityAt: timestamp(c.LastActivityAt),
		IdleStopAt: optTime(s.sandboxes.IdleStopAt(c)), TerminalURL: terminalURL(c.ID)}
}

func optTime(t *time.Time) *timestamp {
	if t == nil {
		return nil
	}
	ts := timestamp(*t)
	return &ts
}

// callerOf is the authenticated user of r as a domain actor.
func callerOf(r *http.Request) actor.Actor {
	u := currentUser(r)
	return actor.Actor{UserID: u.ID, Role: u.Role}
}

func (s *Server) handleTemplates(w http.ResponseWriter, r *http.Request) error {
	ts, err := s.sandboxes.Templates(r.Context())
	if err != nil {
		return err
	}
	out := make([]templateResponse, len(ts))
	for i, t := range ts {
		out[i] = newTemplateResponse(t)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// templateInput reads the admin's template parameters from the query.
func templateInput(q *query) sandbox.TemplateInput {
	in := sandbox.TemplateInput{
		Name: q.optStr("name"), Description: q.optStr("description"), Image: q.optStr("image"),
		Runtime: q.optStr("runtime"), User: q.optStr("user"),
		MemoryMB: q.optInt("memory_mb", 0, 1<<20), CPUMillis: q.optInt("cpu_millis", 0, 1<<20),
		PidsLimit: q.optInt("pids_limit", 0, 1<<20), DiskMB: q.optInt("disk_mb", 0, 1<<30),
		Network: q.optBool("network"), NoNewPrivileges: q.optBool("no_new_privileges"),
		Kind: q.optStr("kind"), ExtraDisksMB: q.optInts("extra_disks_mb", 16, 0, 1<<20),
	}
	if v := q.optStr("shell"); v != nil {
		shell := strings.Fields(*v)
		in.Shell = &shell
	}
	if v := q.optStr("cap_add"); v != nil {
		caps := []string{}
		for _, c := range strings.Split(*v, ",") {
			if c = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(c)), "CAP_"); c != "" {
				caps = append(caps, c)
			}
		}
		in.CapAdd = &caps
	}
	return in
}

func (s *Server) handleAdminCreateTemplate(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	in := templateInput(q)
	if err := q.err(); err != nil {
		return err
	}
	t, err := s.sandboxes.CreateTemplate(r.Context(), in)
	if err != nil {
		return errs.In("query", err)
	}
	writeJSON(w, http.StatusCreated, newTemplateResponse(t))
	return nil
}

func (s *Server) handleAdminUpdateTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q := newQuery(r)
	in := templateInput(q)
	if err := q.err(); err != nil {
		return err
	}
	t, err := s.sandboxes.UpdateTemplate(r.Context(), id, in)
	if err != nil {
		return errs.In("query", err)
	}
	writeJSON(w, http.StatusOK, newTemplateResponse(t))
	return nil
}

func (s *Server) handleAdminDeleteTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := s.sandboxes.DeleteTemplate(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"detail": "Template deleted", "id": id})
	return nil
}

type createContainerRequest struct {
	TemplateID *int64  `json:"template_id"`
	Name       *string `json:"name"`
}

func (s *Server) handleCreateContainer(w http.ResponseWriter, r *http.Request) error {
	var req createContainerRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "template_id", req.TemplateID)
	if err := f.Err(); err != nil {
		return err
	}
	n := sandbox.NewContainer{TemplateID: *req.TemplateID}
	if req.Name != nil {
		n.Name = *req.Name
	}
	// Ended lab attempts' sandboxes hold no place in the quota this counts.
	s.labs.ReleaseEndedSandboxes(r.Context(), callerOf(r))
	c, err := s.sandboxes.Create(r.Context(), callerOf(r), n)
	if err != nil {
		return errs.In("body", err)
	}
	writeJSON(w, http.StatusCreated, s.newContainerResponse(c))
	return nil
}

func (s *Server) writeContainers(w http.ResponseWriter, cs []*sandbox.Container) {
	out := make([]containerResponse, len(cs))
	for i, c := range cs {
		out[i] = s.newContainerResponse(c)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleListContainers(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.sandboxes.List(r.Context(), callerOf(r))
	if err != nil {
		return err
	}
	s.writeContainers(w, cs)
	return nil
}

func (s *Server) handleAdminListContainers(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	page := readPage(q)
	if err := q.err(); err != nil {
		return err
	}
	cs, total, err := s.sandboxes.ListAll(r.Context(), page.Offset(), page.Size)
	if err != nil {
		return err
	}
	setPageHeaders(w, r, page, total)
	s.writeContainers(w, cs)
	return nil
}

// containerAction serves the routes that act on one container by id.
func (s *Server) containerAction(act func(r *http.Request, a actor.Actor, id int64) (*sandbox.Container, error)) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r, "id")
		if err != nil {
			return err
		}
		c, err := act(r, callerOf(r), id)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, s.newContainerResponse(c))
		return nil
	}
}

func (s *Server) handleGetContainer(r *http.Request, a actor.Actor, id int64) (*sandbox.Container, error) {
	return s.sandboxes.Visit(r.Context(), a, id)
}

func (s *Server) handleStartContainer(r *http.Request, a actor.Actor, id int64) (*sandbox.Container, error) {
	return s.sandboxes.Start(r.Context(), a, id)
}

func (s *Server) handleStopContainer(r *http.Request, a actor.Actor, id int64) (*sandbox.Container, error) {
	return s.sandboxes.Stop(r.Context(), a, id)
}

func (s *Server) handleDeleteContainer(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := s.sandboxes.Delete(r.Context(), callerOf(r), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"detail": "Container deleted", "id": id})
	return nil
}

// handleTerminal serves the terminal WebSocket. Every check comes before the
// shell starts: wrap has checked the Origin and the caller (from a bearer
// header, the token query parameter or the session cookie; see
// authenticate), this checks the query, ownership (404), a running sandbox
// (409) and a free place. A browser sees nothing of a refused upgrade (only
// close code 1006), so a WebSocket upgrade is accepted first and told a
// failure as a control message and close code (terminal.Refuse); any other
// request gets it as plain HTTP, and 426 when every check passes.
func (s *Server) handleTerminal(w http.ResponseWriter, r *http.Request) error {
	if !isWebSocketUpgrade(r) {
		adm, err := s.admitTerminal(r)
		if err != nil {
			return err
		}
		adm.release()
		return errUpgradeRequired
	}
	conn, err := s.acceptTerminal(w, r)
	if err != nil {
		return nil // Accept has answered the client
	}
	adm, err := s.admitTerminal(r)
	if err != nil {
		s.refuseTerminal(r, conn, err)
		return nil
	}
	if adm.session != "" {
		st := stateOf(r.Context())
		owner := terminal.Owner{UserID: st.user.ID, Check: s.stillAllowed(st.token, adm.c)}
		if s.terminals.Attach(r.Context(), conn, adm.session, adm.c.ID, owner, adm.cols, adm.rows) {
			return nil
		}
		// The session ended meanwhile: a new shell, which needs a place.
		if adm.release, err = s.terminals.Reserve(adm.c.ID); err != nil {
			s.refuseTerminal(r, conn, err)
			return nil
		}
	}
	rec, err := s.terminalRecording(r, adm.c, adm.cols, adm.rows, adm.record)
	if err != nil {
		adm.release()
		s.refuseTerminal(r, conn, err)
		return nil
	}
	sess, c, err := s.sandboxes.Terminal(r.Context(), adm.c, adm.cols, adm.rows)
	if err != nil {
		adm.release()
		s.refuseTerminal(r, conn, err)
		return nil
	}
	st := stateOf(r.Context())
	s.terminals.Serve(r.Context(), conn, sess, c, terminal.Owner{UserID: st.user.ID, Check: s.stillAllowed(st.token, c), Record: rec}, adm.release)
	return nil
}

// acceptTerminal upgrades a terminal request to a WebSocket. The Origin was
// checked before (authenticate: this site, an allowed one, and for the
// session cookie never "*"), so that a refusal reaches the browser after
// the upgrade; coder/websocket's own check, which would refuse before the
// upgrade, is therefore off.
func (s *Server) acceptTerminal(w http.ResponseWriter, r *http.Request) (*websocket.Conn, error) {
	return websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
}

// refuseUpgrade answers a terminal upgrade that failed authentication: the
// upgrade is accepted and the failure told as the error message and close
// code 4000+status of docs/terminal.md.
func (s *Server) refuseUpgrade(w http.ResponseWriter, r *http.Request, err error) {
	conn, aerr := s.acceptTerminal(w, r)
	if aerr != nil {
		return // Accept has answered the client
	}
	s.refuseTerminal(r, conn, err)
}

var errUpgradeRequired = errs.E(errs.UpgradeRequired, "This is a WebSocket: connect with a WebSocket client (Upgrade: websocket)")

// isWebSocketUpgrade reports whether r asks to switch to the WebSocket protocol.
func isWebSocketUpgrade(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

// headerHasToken reports whether a comma-separated header lists token.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// terminalAdmission is a terminal request that passed every check, holding
// a place on its sandbox until release.
type terminalAdmission struct {
	c          *sandbox.Container
	cols, rows uint
	session    string // an open session of the user's on this sandbox to attach to; "" for a new shell
	record     bool   // the client asks for a recording of a new free-play shell (record=true)
	release    func() // gives back the place taken for a new shell (a no-op when attaching)
}

// admitTerminal runs a terminal request's checks after authentication in
// the order of docs/terminal.md's table.
func (s *Server) admitTerminal(r *http.Request) (*terminalAdmission, error) {
	id, err := pathID(r, "container_id")
	if err != nil {
		return nil, err
	}
	q := newQuery(r)
	cols := q.int("cols", 80, 1, terminal.MaxSize)
	rows := q.int("rows", 24, 1, terminal.MaxSize)
	record := q.optBool("record")
	if err := q.err(); err != nil {
		return nil, err
	}
	c, err := s.sandboxes.Get(r.Context(), callerOf(r), id)
	if err != nil {
		return nil, err // 404 before saying anything about terminals
	}
	if c.Status != sandbox.StatusRunning {
		return nil, sandbox.ErrNotRunning
	}
	adm := &terminalAdmission{c: c, cols: uint(cols), rows: uint(rows), record: record != nil && *record, release: func() {}}
	// A session of the user's on this sandbox keeps its place; any other id
	// (unknown, ended, another user's or sandbox's) is a new shell.
	if sid := r.URL.Query().Get("session"); sid != "" && s.terminals.Has(sid, stateOf(r.Context()).user.ID, c.ID) {
		adm.session = sid
		return adm, nil
	}
	if adm.release, err = s.terminals.Reserve(id); err != nil {
		return nil, err
	}
	return adm, nil
}

// refuseTerminal tells a terminal client, after the upgrade, why it cannot
// have its terminal, and closes: the status and detail a plain HTTP answer
// would have had, as writeError logs and words them.
func (s *Server) refuseTerminal(r *http.Request, conn *websocket.Conn, err error) {
	status, detail := Describe(err)
	if status == http.StatusInternalServerError {
		s.log.ErrorContext(r.Context(), "request failed", "request_id", requestID(r.Context()),
			"method", r.Method, "path", r.URL.Path, "error", err.Error())
	}
	terminal.Refuse(r.Context(), conn, status, detail)
}

// stillAllowed checks, while a terminal lasts, that the user of token may
// still use sandbox c, for changes made by another process (this one's end
// the terminals at once through terminal.Bridge.CloseUser). Only a verdict
// ends the terminal; a database that does not answer for a moment does not.
func (s *Server) stillAllowed(token string, c *sandbox.Container) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		u, err := s.auth.StillAllowed(ctx, token)
		if err == nil && u.ID != c.UserID && u.Role != auth.RoleAdmin {
			err = sandbox.ErrContainerNotFound
		}
		switch {
		case err == nil:
			return nil
		case errs.Is(err, errs.Unauthenticated), errs.Is(err, errs.Forbidden), errs.Is(err, errs.NotFound):
			return err
		}
		s.log.WarnContext(ctx, "could not check a terminal's user again", "container_id", c.ID, "error", err.Error())
		return nil
	}
}

// sameOrigin reports whether origin names the host the request came to.
func (s *Server) sameOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}
