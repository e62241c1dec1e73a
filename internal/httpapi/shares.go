package httpapi

import (
	"context"
	"errors"
	"net/http"

	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/share"
	"tuxlab/internal/terminal"
)

// shareRoutes are the routes of shared terminals (docs/terminal.md,
// "Shared terminals").
func (s *Server) shareRoutes() []route {
	return []route{
		{"POST", "/api/containers/{id}/shares", user, s.handleCreateShare, docCreateShare},
		{"GET", "/api/containers/{id}/shares", user, s.handleListShares, docListShares},
		{"PATCH", "/api/containers/{id}/shares/{share_id}", user, s.handlePatchShare, docPatchShare},
		{"DELETE", "/api/containers/{id}/shares/{share_id}", user, s.handleDeleteShare, docDeleteShare},
		{"GET", "/ws/watch", socket, s.handleWatch, docWatch},
	}
}

// shareResponse is a share as its owner sees it; the token only once, in
// the answer that created it.
type shareResponse struct {
	ID        int64              `json:"id"`
	Mode      string             `json:"mode"`
	Typing    bool               `json:"typing"`
	ExpiresAt timestamp          `json:"expires_at"`
	CreatedAt timestamp          `json:"created_at"`
	Watchers  []terminal.Watcher `json:"watchers"`
	Token     string             `json:"token,omitempty"`
	Link      string             `json:"link,omitempty"`
}

func (s *Server) newShareResponse(sh *share.Share) shareResponse {
	return shareResponse{ID: sh.ID, Mode: string(sh.Mode), Typing: sh.Typing, ExpiresAt: timestamp(sh.ExpiresAt),
		CreatedAt: timestamp(sh.CreatedAt), Watchers: s.terminals.Watchers(sh.ID)}
}

// ownSandbox is sandbox id when it is the caller's own: anyone else's,
// an admin's view included, is 404 (sharing is its owner's choice).
func (s *Server) ownSandbox(r *http.Request) (*sandbox.Container, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	c, err := s.sandboxes.Get(r.Context(), callerOf(r), id)
	if err != nil {
		return nil, err
	}
	if c.UserID != currentUser(r).ID {
		return nil, sandbox.ErrContainerNotFound
	}
	return c, nil
}

type shareRequest struct {
	Mode    *string `json:"mode"`
	Minutes *int    `json:"minutes"`
}

func (s *Server) handleCreateShare(w http.ResponseWriter, r *http.Request) error {
	c, err := s.ownSandbox(r)
	if err != nil {
		return err
	}
	req := shareRequest{}
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &req); err != nil {
			return err
		}
	}
	mode, minutes := share.Read, share.DefaultMinutes
	if req.Mode != nil {
		mode = share.Mode(*req.Mode)
	}
	if req.Minutes != nil {
		minutes = *req.Minutes
	}
	sh, token, err := s.shares.Create(r.Context(), c.ID, c.UserID, mode, minutes)
	if err != nil {
		return errs.In("body", err)
	}
	out := s.newShareResponse(sh)
	out.Token, out.Link = token, "/watch#"+token
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) handleListShares(w http.ResponseWriter, r *http.Request) error {
	c, err := s.ownSandbox(r)
	if err != nil {
		return err
	}
	shs, err := s.shares.List(r.Context(), c.ID)
	if err != nil {
		return err
	}
	out := make([]shareResponse, len(shs))
	for i, sh := range shs {
		out[i] = s.newShareResponse(sh)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type sharePatch struct {
	Typing *bool `json:"typing"`
}

func (s *Server) handlePatchShare(w http.ResponseWriter, r *http.Request) error {
	c, err := s.ownSandbox(r)
	if err != nil {
		return err
	}
	id, err := pathID(r, "share_id")
	if err != nil {
		return err
	}
	var req sharePatch
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "typing", req.Typing)
	if err := f.Err(); err != nil {
		return err
	}
	sh, err := s.shares.SetTyping(r.Context(), c.ID, id, *req.Typing)
	if err != nil {
		return errs.In("body", err)
	}
	s.terminals.SetTyping(sh.ID, sh.GuestTyping())
	writeJSON(w, http.StatusOK, s.newShareResponse(sh))
	return nil
}

func (s *Server) handleDeleteShare(w http.ResponseWriter, r *http.Request) error {
	c, err := s.ownSandbox(r)
	if err != nil {
		return err
	}
	id, err := pathID(r, "share_id")
	if err != nil {
		return err
	}
	if err := s.shares.End(r.Context(), c.ID, id); err != nil {
		return err
	}
	s.terminals.EndShare(id, "Sharing ended by the owner")
	s.guestPreviews.end(id) // their open connections through the preview
	writeJSON(w, http.StatusOK, map[string]any{"detail": "Sharing ended", "id": id})
	return nil
}

// handleWatch serves a guest's WebSocket on a shared terminal: any signed-in
// user with a live share's token (query parameter share) watches the
// owner's terminal on that sandbox. Failures are told as on the terminal
// route (a 4xx after the upgrade, or plain HTTP).
func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request) error {
	sh, err := s.admitWatch(r)
	if !isWebSocketUpgrade(r) {
		if err != nil {
			return err
		}
		return errUpgradeRequired
	}
	conn, aerr := s.acceptTerminal(w, r)
	if aerr != nil {
		return nil // Accept has answered the client
	}
	if err != nil {
		s.refuseTerminal(r, conn, err)
		return nil
	}
	st := stateOf(r.Context())
	g := terminal.Guest{ShareID: sh.ID, Name: st.user.Username, Owner: sh.OwnerName, Typing: sh.GuestTyping(),
		Until: sh.ExpiresAt, Check: s.shareStillOpen(st.token, sh)}
	if err := s.terminals.Watch(r.Context(), conn, sh.UserID, sh.ContainerID, g); err != nil {
		s.refuseTerminal(r, conn, err)
	}
	return nil
}

// admitWatch checks a guest's request: a share token that is live, on a
// sandbox that runs.
func (s *Server) admitWatch(r *http.Request) (*share.Share, error) {
	q := newQuery(r)
	token := q.requireStr("share")
	if err := q.err(); err != nil {
		return nil, err
	}
	sh, err := s.shares.ByToken(r.Context(), token)
	if err != nil {
		return nil, err
	}
	return sh, nil
}

// shareStillOpen checks, while a guest watches, that the share is still
// live and the guest still may sign in, and says whether the guest may type.
// Only a verdict closes the guest's socket; a database that does not answer
// for a moment does not.
func (s *Server) shareStillOpen(token string, sh *share.Share) func(ctx context.Context) (bool, error) {
	typing := sh.GuestTyping()
	return func(ctx context.Context) (bool, error) {
		if _, err := s.auth.StillAllowed(ctx, token); err != nil {
			if errs.Is(err, errs.Unauthenticated) || errs.Is(err, errs.Forbidden) {
				return false, err
			}
			return typing, nil
		}
		now, err := s.shares.Live(ctx, sh.ContainerID, sh.ID)
		switch {
		case errs.Is(err, errs.NotFound):
			return false, share.ErrLinkNotFound
		case errors.Is(err, share.ErrInExam):
			return false, err
		case err != nil:
			return typing, nil
		}
		typing = now.GuestTyping()
		return typing, nil
	}
}
