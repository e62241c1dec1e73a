// Package recording keeps terminal recordings: a terminal session's output
// as asciicast v2 (docs/terminal.md, "Recordings"), with who may replay
// them, the choice of which sessions are recorded, and their retention.
// The terminal package records; this package decides and serves.
package recording

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/errs"
)

// Attempt kinds a recording may belong to.
const (
	KindLab  = "lab"
	KindExam = "exam"
)

// Defaults of Options.
const (
	DefaultMaxBytes  = 2 << 20
	DefaultRetention = 30 * 24 * time.Hour
)

// ErrNotFound is a recording that does not exist or that the caller may not
// see: the same answer, so ids say nothing.
var ErrNotFound = errs.E(errs.NotFound, "Recording not found")

// Recording is one recorded terminal session. Its events (the cast's lines
// after the header) are read apart, by Cast.
type Recording struct {
	ID            int64
	UserID        int64 // the sandbox's owner
	ContainerID   int64
	ContainerName string
	AttemptKind   string // KindLab, KindExam, or "" for free play
	AttemptID     *int64
	Width, Height int
	StartedAt     time.Time
	EndedAt       *time.Time // nil while the session runs
	Bytes         int64      // the events stored
	Truncated     bool       // output past the size bound was dropped
}

// Filter selects recordings: of a user, of a sandbox, or both.
type Filter struct {
	UserID      *int64
	ContainerID *int64
}

// Store keeps recordings (internal/store implements it).
type Store interface {
	// CreateRecording inserts r, with no events yet, and sets its ID.
	CreateRecording(ctx context.Context, r *Recording) error
	// AppendRecording adds events to recording id and sets its size and
	// truncated flag, and its end when ended is not nil.
	AppendRecording(ctx context.Context, id int64, events []byte, size int64, truncated bool, ended *time.Time) error
	// FindRecording returns recording id, or ErrNotFound.
	FindRecording(ctx context.Context, id int64) (*Recording, error)
	// RecordingEvents returns the event lines of recording id.
	RecordingEvents(ctx context.Context, id int64) ([]byte, error)
	// FindRecordings lists the recordings f selects, newest first.
	FindRecordings(ctx context.Context, f Filter) ([]*Recording, error)
	// DeleteRecording deletes recording id (none: ErrNotFound).
	DeleteRecording(ctx context.Context, id int64) error
	// DeleteRecordingsBefore deletes the recordings started before t and
	// says how many.
	DeleteRecordingsBefore(ctx context.Context, t time.Time) (int64, error)
	// Teaches reports whether instructorID owns a class learnerID is in.
	Teaches(ctx context.Context, instructorID, learnerID int64) (bool, error)
	// OpenAttempt finds the lab or exam attempt in progress of userID whose
	// sandbox is containerID (ok false: none).
	OpenAttempt(ctx context.Context, userID, containerID int64) (kind string, id int64, ok bool, err error)
	// SandboxOwner returns the owner of sandbox containerID (ok false: no
	// such sandbox, or no longer).
	SandboxOwner(ctx context.Context, containerID int64) (userID int64, ok bool, err error)
	// AttemptRecording returns the id of the latest recording of an
	// attempt, or nil.
	AttemptRecording(ctx context.Context, kind string, attemptID int64) (*int64, error)
}

// Options tune a Service; zero values take the defaults.
type Options struct {
	MaxBytes  int64         // the most a recording stores (DefaultMaxBytes)
	Retention time.Duration // recordings older than this are deleted (DefaultRetention)
	Now       func() time.Time
	Log       *slog.Logger
}

// Service is the recordings domain.
type Service struct {
	store Store
	opt   Options
}

// NewService returns a Service over store.
func NewService(store Store, o Options) *Service {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Service{store: store, opt: o}
}

// MaxBytes is the most one recording stores.
func (s *Service) MaxBytes() int64 { return s.opt.MaxBytes }

// Sandbox is what Plan needs to know of the sandbox a terminal opens on.
type Sandbox struct {
	ID     int64
	UserID int64
	Name   string
}

// Plan says whether a terminal opening now on sandbox c is recorded, and
// returns the recording to create (nil: not recorded). The terminal of a
// lab or exam attempt in progress is always recorded, tied to the attempt;
// any other (free play) only when its owner asks (asked).
func (s *Service) Plan(ctx context.Context, c Sandbox, cols, rows uint, asked bool) (*Recording, error) {
	kind, id, ok, err := s.store.OpenAttempt(ctx, c.UserID, c.ID)
	if err != nil {
		return nil, err
	}
	if !ok && !asked {
		return nil, nil
	}
	r := &Recording{UserID: c.UserID, ContainerID: c.ID, ContainerName: c.Name, Width: int(cols), Height: int(rows),
		StartedAt: s.opt.Now().UTC().Truncate(time.Microsecond)}
	if ok {
		r.AttemptKind, r.AttemptID = kind, &id
	}
	return r, nil
}

// Begin stores r as a new recording (the terminal's first flush).
func (s *Service) Begin(ctx context.Context, r *Recording) error {
	return s.store.CreateRecording(ctx, r)
}

// Append adds events to recording id (the terminal's later flushes).
func (s *Service) Append(ctx context.Context, id int64, events []byte, size int64, truncated bool, ended *time.Time) error {
	return s.store.AppendRecording(ctx, id, events, size, truncated, ended)
}

// mayView reports whether a may replay the recordings of ownerID: the
// owner, an admin, or an instructor of a class ownerID is in.
func (s *Service) mayView(ctx context.Context, a actor.Actor, ownerID int64) (bool, error) {
	if a.Owns(ownerID) {
		return true, nil
	}
	if a.Role != actor.Instructor {
		return false, nil
	}
	return s.store.Teaches(ctx, a.UserID, ownerID)
}

// Get returns recording id if a may see it, else ErrNotFound.
func (s *Service) Get(ctx context.Context, a actor.Actor, id int64) (*Recording, error) {
	r, err := s.store.FindRecording(ctx, id)
	if err != nil {
		return nil, err
	}
	ok, err := s.mayView(ctx, a, r.UserID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrNotFound
	}
	return r, nil
}

// OfSandbox lists the recordings of sandbox containerID, newest first, when
// a may see them: its owner's (or, once it is gone, the owner its
// recordings name). Nothing to see is ErrNotFound, as for a sandbox that
// never existed.
func (s *Service) OfSandbox(ctx context.Context, a actor.Actor, containerID int64) ([]*Recording, error) {
	ownerID, exists, err := s.store.SandboxOwner(ctx, containerID)
	if err != nil {
		return nil, err
	}
	rs, err := s.store.FindRecordings(ctx, Filter{ContainerID: &containerID})
	if err != nil {
		return nil, err
	}
	if !exists {
		if len(rs) == 0 {
			return nil, ErrNotFound
		}
		ownerID = rs[0].UserID
	}
	ok, err := s.mayView(ctx, a, ownerID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrNotFound
	}
	return rs, nil
}

// Mine lists a's own recordings, newest first.
func (s *Service) Mine(ctx context.Context, a actor.Actor) ([]*Recording, error) {
	return s.store.FindRecordings(ctx, Filter{UserID: &a.UserID})
}

// Cast returns recording id as an asciicast v2 file, when a may see it.
func (s *Service) Cast(ctx context.Context, a actor.Actor, id int64) (*Recording, []byte, error) {
	r, err := s.Get(ctx, a, id)
	if err != nil {
		return nil, nil, err
	}
	events, err := s.store.RecordingEvents(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	var b bytes.Buffer
	b.Write(Header(r))
	b.WriteByte('\n')
	b.Write(events)
	return r, b.Bytes(), nil
}

// Header is the asciicast v2 header line of r.
func Header(r *Recording) []byte {
	h := struct {
		Version   int    `json:"version"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
		Timestamp int64  `json:"timestamp"`
		Title     string `json:"title,omitempty"`
	}{2, r.Width, r.Height, r.StartedAt.Unix(), r.ContainerName}
	b, _ := json.Marshal(h)
	return b
}

// Delete deletes recording id: its owner (or an admin) only; an instructor
// who may replay it gets 404 as anyone else.
func (s *Service) Delete(ctx context.Context, a actor.Actor, id int64) error {
	r, err := s.store.FindRecording(ctx, id)
	if err != nil {
		return err
	}
	if !a.Owns(r.UserID) {
		return ErrNotFound
	}
	return s.store.DeleteRecording(ctx, id)
}

// OfAttempt returns the id of the latest recording of an attempt whose
// reader the caller has checked already (nil: none).
func (s *Service) OfAttempt(ctx context.Context, kind string, attemptID int64) (*int64, error) {
	return s.store.AttemptRecording(ctx, kind, attemptID)
}

// Purge deletes the recordings older than the retention period.
func (s *Service) Purge(ctx context.Context) (int64, error) {
	return s.store.DeleteRecordingsBefore(ctx, s.opt.Now().Add(-s.opt.Retention))
}

// Run purges old recordings now and then every interval until ctx ends.
// Several replicas may run it at once: a delete by age is the same whoever
// runs it.
func (s *Service) Run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if n, err := s.Purge(ctx); err != nil && ctx.Err() == nil {
			s.opt.Log.Warn("could not delete old terminal recordings", "error", err.Error())
		} else if n > 0 {
			s.opt.Log.Info("deleted old terminal recordings", "count", n, "retention", s.opt.Retention.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
