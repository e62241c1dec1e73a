package share

import (
	"context"
	"errors"
	"testing"
	"time"

	"tuxlab/internal/errs"
)

// memStore is a Store in memory, for the service's own rules.
type memStore struct{ shares map[int64]*Share }

func (m *memStore) CreateShare(_ context.Context, sh *Share, max int) error {
	if len(m.shares) >= max {
		return ErrTooMany
	}
	sh.ID = int64(len(m.shares) + 1)
	m.shares[sh.ID] = sh
	return nil
}
func (m *memStore) InExam(context.Context, int64) (bool, error)                    { return false, nil }
func (m *memStore) FindShares(context.Context, int64, time.Time) ([]*Share, error) { return nil, nil }
func (m *memStore) FindShareByID(_ context.Context, _, id int64) (*Share, error) {
	if sh := m.shares[id]; sh != nil {
		return sh, nil
	}
	return nil, ErrNotFound
}
func (m *memStore) FindShareByToken(_ context.Context, hash string) (*Share, error) {
	for _, sh := range m.shares {
		if sh.TokenHash == hash {
			return sh, nil
		}
	}
	return nil, ErrNotFound
}
func (m *memStore) SetShareTyping(_ context.Context, _, id int64, typing bool) error {
	m.shares[id].Typing = typing
	return nil
}
func (m *memStore) DeleteShare(_ context.Context, _, id int64) error {
	delete(m.shares, id)
	return nil
}

func TestCreateValidates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    Mode
		minutes int
		ok      bool
	}{
		{"read", Read, DefaultMinutes, true},
		{"write, shortest", Write, MinMinutes, true},
		{"longest", Read, MaxMinutes, true},
		{"too short", Read, 0, false},
		{"too long", Read, MaxMinutes + 1, false},
		{"unknown mode", "all", 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewService(&memStore{shares: map[int64]*Share{}}, nil)
			sh, token, err := s.Create(context.Background(), 1, 2, tc.mode, tc.minutes)
			if !tc.ok {
				if !errs.Is(err, errs.Invalid) {
					t.Fatalf("Create(%q, %d) = %v, want a 422", tc.mode, tc.minutes, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sh.TokenHash == "" || sh.TokenHash == token || sh.ExpiresAt.Sub(sh.CreatedAt) != time.Duration(tc.minutes)*time.Minute {
				t.Fatalf("share %+v for token %q", sh, token)
			}
			got, err := s.ByToken(context.Background(), token)
			if err != nil || got.ID != sh.ID {
				t.Fatalf("ByToken = %+v, %v", got, err)
			}
		})
	}
}

func TestByTokenRefusesExpiredAndMalformed(t *testing.T) {
	now := time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)
	s := NewService(&memStore{shares: map[int64]*Share{}}, func() time.Time { return now })
	_, token, err := s.Create(context.Background(), 1, 2, Read, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"", "short", token + "x"} {
		if _, err := s.ByToken(context.Background(), tok); !errors.Is(err, ErrLinkNotFound) {
			t.Fatalf("ByToken(%q) = %v, want ErrLinkNotFound", tok, err)
		}
	}
	now = now.Add(time.Minute)
	if _, err := s.ByToken(context.Background(), token); !errors.Is(err, ErrLinkNotFound) {
		t.Fatalf("an expired token gave %v, want ErrLinkNotFound", err)
	}
}

func TestSetTypingNeedsAWriteShare(t *testing.T) {
	s := NewService(&memStore{shares: map[int64]*Share{}}, nil)
	read, _, _ := s.Create(context.Background(), 1, 2, Read, 5)
	if _, err := s.SetTyping(context.Background(), 1, read.ID, true); !errs.Is(err, errs.Invalid) {
		t.Fatalf("typing on a read share: %v, want a 422", err)
	}
	write, _, _ := s.Create(context.Background(), 1, 2, Write, 5)
	sh, err := s.SetTyping(context.Background(), 1, write.ID, true)
	if err != nil || !sh.GuestTyping() {
		t.Fatalf("typing on a write share: %+v, %v", sh, err)
	}
}
