package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"tuxlab/internal/errs"
	"tuxlab/internal/recording"
	"tuxlab/internal/sandbox"
)

// recordingRoutes are the routes of terminal recordings (docs/terminal.md,
// "Recordings").
func (s *Server) recordingRoutes() []route {
	return []route{
		{"GET", "/api/recordings", user, s.handleMyRecordings, docMyRecordings},
		{"GET", "/api/containers/{id}/recordings", user, s.handleSandboxRecordings, docSandboxRecordings},
		{"GET", "/api/recordings/{id}", user, s.handleRecordingCast, docRecordingCast},
		{"DELETE", "/api/recordings/{id}", user, s.handleDeleteRecording, docDeleteRecording},
	}
}

// recordingResponse describes a recording; its cast is at URL.
type recordingResponse struct {
	ID            int64      `json:"id"`
	UserID        int64      `json:"user_id"`
	ContainerID   int64      `json:"container_id"`
	ContainerName string     `json:"container_name"`
	AttemptKind   *string    `json:"attempt_kind"`
	AttemptID     *int64     `json:"attempt_id"`
	Width         int        `json:"width"`
	Height        int        `json:"height"`
	StartedAt     timestamp  `json:"started_at"`
	EndedAt       *timestamp `json:"ended_at"`
	Bytes         int64      `json:"bytes"`
	Truncated     bool       `json:"truncated"`
	URL           string     `json:"url"`
}

func newRecordingResponse(r *recording.Recording) recordingResponse {
	out := recordingResponse{ID: r.ID, UserID: r.UserID, ContainerID: r.ContainerID, ContainerName: r.ContainerName, AttemptID: r.AttemptID,
		Width: r.Width, Height: r.Height, StartedAt: timestamp(r.StartedAt), EndedAt: optTime(r.EndedAt), Bytes: r.Bytes, Truncated: r.Truncated,
		URL: recordingURL(r.ID)}
	if r.AttemptKind != "" {
		out.AttemptKind = &r.AttemptKind
	}
	return out
}

func recordingURL(id int64) string { return "/api/recordings/" + strconv.FormatInt(id, 10) }

func writeRecordings(w http.ResponseWriter, rs []*recording.Recording) {
	out := make([]recordingResponse, len(rs))
	for i, r := range rs {
		out[i] = newRecordingResponse(r)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleMyRecordings(w http.ResponseWriter, r *http.Request) error {
	rs, err := s.recordings.Mine(r.Context(), callerOf(r))
	if err != nil {
		return err
	}
	writeRecordings(w, rs)
	return nil
}

func (s *Server) handleSandboxRecordings(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	rs, err := s.recordings.OfSandbox(r.Context(), callerOf(r), id)
	if errs.Is(err, errs.NotFound) {
		return sandbox.ErrContainerNotFound // the same answer as every sandbox route
	}
	if err != nil {
		return err
	}
	writeRecordings(w, rs)
	return nil
}

// castMediaType is asciicast's media type.
const castMediaType = "application/x-asciicast"

func (s *Server) handleRecordingCast(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	_, cast, err := s.recordings.Cast(r.Context(), callerOf(r), id)
	if err != nil {
		return err
	}
	// What a learner's shell printed is the learner's text: never sniffed
	// as a page, nor run as one should a browser open it.
	h := w.Header()
	h.Set("Content-Type", castMediaType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Content-Disposition", fmt.Sprintf(`inline; filename="recording-%d.cast"`, id))
	h.Set("Cache-Control", "private, no-store")
	h.Set("Content-Length", strconv.Itoa(len(cast)))
	w.WriteHeader(http.StatusOK)
	w.Write(cast)
	return nil
}

func (s *Server) handleDeleteRecording(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := s.recordings.Delete(r.Context(), callerOf(r), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"detail": "Recording deleted", "id": id})
	return nil
}

// terminalRecording says whether the terminal opening now on c is recorded
// (the recording to make, or nil): a lab's or exam's attempt always, free
// play when the client asked (record=true).
func (s *Server) terminalRecording(r *http.Request, c *sandbox.Container, cols, rows uint, asked bool) (*recording.Recording, error) {
	if s.recordings == nil {
		return nil, nil
	}
	return s.recordings.Plan(r.Context(), recording.Sandbox{ID: c.ID, UserID: c.UserID, Name: c.Name}, cols, rows, asked)
}

// attemptRecording is the id of the latest recording of an attempt the
// caller may read, or nil; a store that does not answer leaves it out
// rather than failing the attempt's answer.
func (s *Server) attemptRecording(r *http.Request, kind string, attemptID int64) *int64 {
	if s.recordings == nil {
		return nil
	}
	id, err := s.recordings.OfAttempt(r.Context(), kind, attemptID)
	if err != nil {
		s.log.WarnContext(r.Context(), "could not find an attempt's recording", "kind", kind, "attempt_id", attemptID, "error", err.Error())
		return nil
	}
	return id
}
