// Package share is the shared terminal's domain (docs/terminal.md, "Shared
// terminals"): a sandbox's owner invites someone to watch its terminal with
// a link carrying a short-lived random token, kept hashed. A share is live
// until it expires or its owner ends it; the guests' sockets are the
// terminal package's.
package share

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"tuxlab/internal/errs"
)

// Mode says what a share's guests may do.
type Mode string

const (
	// Read: guests watch; nothing they type reaches the shell.
	Read Mode = "read"
	// Write: guests type too, while the owner allows it (Share.Typing).
	Write Mode = "write"
)

// Limits.
const (
	// MaxPerSandbox is how many live shares a sandbox may have at once.
	MaxPerSandbox = 3
	// MinMinutes, MaxMinutes and DefaultMinutes bound a share's life.
	MinMinutes     = 1
	MaxMinutes     = 240
	DefaultMinutes = 60
	// tokenBytes is a token's randomness: 256 bits.
	tokenBytes = 32
)

// Share is one invitation to watch a sandbox's terminal.
type Share struct {
	ID          int64
	ContainerID int64
	UserID      int64  // the sandbox's owner, who shared it
	OwnerName   string // the owner's username (read only)
	TokenHash   string // hex SHA-256 of the token; the token itself is never stored
	Mode        Mode
	Typing      bool // a write share's guests may type now
	ExpiresAt   time.Time
	CreatedAt   time.Time
}

// Errors.
var (
	ErrNotFound     = errs.E(errs.NotFound, "Share not found")
	ErrLinkNotFound = errs.E(errs.NotFound, "This share link is unknown, ended or expired: ask for a new one")
	ErrTooMany      = errs.Errorf(errs.Conflict, "Too many live shares on this sandbox (at most %d): end one first", MaxPerSandbox)
	ErrInExam       = errs.E(errs.Conflict, "This sandbox is an exam's in progress: an exam is taken alone, so its terminal cannot be shared")
	ErrReadOnly     = errs.Field([]any{"typing"}, "A read-only share cannot let its guests type: share again with mode write", "value_error")
)

// Store keeps shares.
type Store interface {
	// CreateShare inserts sh unless its sandbox has max live shares at
	// sh.CreatedAt (ErrTooMany), counted under a lock of the sandbox's row.
	CreateShare(ctx context.Context, sh *Share, max int) error
	// FindShares lists the shares of sandbox containerID live at now, oldest first.
	FindShares(ctx context.Context, containerID int64, now time.Time) ([]*Share, error)
	// FindShareByID returns share id of sandbox containerID, or ErrNotFound.
	FindShareByID(ctx context.Context, containerID, id int64) (*Share, error)
	// FindShareByToken returns the share with token hash hash, or ErrLinkNotFound.
	FindShareByToken(ctx context.Context, hash string) (*Share, error)
	// SetShareTyping sets whether share id's guests may type; ErrNotFound.
	SetShareTyping(ctx context.Context, containerID, id int64, typing bool) error
	// DeleteShare deletes share id of sandbox containerID; ErrNotFound.
	DeleteShare(ctx context.Context, containerID, id int64) error
	// InExam reports whether sandbox containerID is the sandbox of an
	// exam attempt in progress.
	InExam(ctx context.Context, containerID int64) (bool, error)
}

// Service is the share domain.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns a Service over store; now nil is the wall clock.
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

func (s *Service) stamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Create shares the terminal of sandbox containerID, whose owner userID the
// caller has checked, for minutes minutes, and returns it with its token
// (given once, never stored).
func (s *Service) Create(ctx context.Context, containerID, userID int64, mode Mode, minutes int) (*Share, string, error) {
	var f errs.Fields
	if mode != Read && mode != Write {
		f.Add([]any{"mode"}, "Mode must be read or write", "enum")
	}
	if minutes < MinMinutes || minutes > MaxMinutes {
		f.Add([]any{"minutes"}, fmt.Sprintf("Minutes must be from %d to %d", MinMinutes, MaxMinutes), "value_error")
	}
	if err := f.Err(); err != nil {
		return nil, "", err
	}
	if err := s.notInExam(ctx, containerID); err != nil {
		return nil, "", err
	}
	token, hash, err := newToken()
	if err != nil {
		return nil, "", err
	}
	now := s.stamp()
	sh := &Share{ContainerID: containerID, UserID: userID, TokenHash: hash, Mode: mode,
		ExpiresAt: now.Add(time.Duration(minutes) * time.Minute), CreatedAt: now}
	if err := s.store.CreateShare(ctx, sh, MaxPerSandbox); err != nil {
		return nil, "", err
	}
	return sh, token, nil
}

// List returns the live shares of sandbox containerID.
func (s *Service) List(ctx context.Context, containerID int64) ([]*Share, error) {
	return s.store.FindShares(ctx, containerID, s.stamp())
}

// Live returns share id of sandbox containerID while it is live.
func (s *Service) Live(ctx context.Context, containerID, id int64) (*Share, error) {
	sh, err := s.store.FindShareByID(ctx, containerID, id)
	if err != nil {
		return nil, err
	}
	if !s.stamp().Before(sh.ExpiresAt) {
		return nil, ErrNotFound
	}
	if err := s.notInExam(ctx, containerID); err != nil {
		return nil, err
	}
	return sh, nil
}

// notInExam answers ErrInExam while sandbox containerID is an exam
// attempt's in progress. Exams start on a sandbox of their own, so this
// refuses a share made during the attempt; the checks of a live share
// (Live, ByToken) ask too, so that no path lets a guest into an exam.
func (s *Service) notInExam(ctx context.Context, containerID int64) error {
	in, err := s.store.InExam(ctx, containerID)
	if err != nil {
		return err
	}
	if in {
		return ErrInExam
	}
	return nil
}

// SetTyping lets the guests of live share id type, or stops them; a read
// share refuses typing (422).
func (s *Service) SetTyping(ctx context.Context, containerID, id int64, typing bool) (*Share, error) {
	sh, err := s.Live(ctx, containerID, id)
	if err != nil {
		return nil, err
	}
	if typing && sh.Mode != Write {
		return nil, ErrReadOnly
	}
	if err := s.store.SetShareTyping(ctx, containerID, id, typing); err != nil {
		return nil, err
	}
	sh.Typing = typing
	return sh, nil
}

// End deletes share id of sandbox containerID.
func (s *Service) End(ctx context.Context, containerID, id int64) error {
	return s.store.DeleteShare(ctx, containerID, id)
}

// ByToken returns the live share of token; an unknown, ended or expired one
// is ErrLinkNotFound.
func (s *Service) ByToken(ctx context.Context, token string) (*Share, error) {
	hash, ok := tokenHash(token)
	if !ok {
		return nil, ErrLinkNotFound
	}
	sh, err := s.store.FindShareByToken(ctx, hash)
	if errors.Is(err, ErrNotFound) {
		return nil, ErrLinkNotFound
	}
	if err != nil {
		return nil, err
	}
	if !s.stamp().Before(sh.ExpiresAt) {
		return nil, ErrLinkNotFound
	}
	if err := s.notInExam(ctx, sh.ContainerID); err != nil {
		return nil, err
	}
	return sh, nil
}

// GuestTyping is whether a share's guests may type now.
func (sh *Share) GuestTyping() bool { return sh.Mode == Write && sh.Typing }

func newToken() (token, hash string, err error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("draw a share token: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(b)
	h, _ := tokenHash(token)
	return token, h, nil
}

// tokenHash returns the stored hash of token, or false when token cannot
// be one newToken made.
func tokenHash(token string) (string, bool) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(b) != tokenBytes {
		return "", false
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:]), true
}
