package attempt

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"tuxlab/internal/actor"
)

// row is a domain attempt for the tests: Attempt and a subject.
type row struct {
	Attempt
	Subject int64
}

// rowStore keeps rows in memory, as a domain's store does in a database.
type rowStore map[int64]*row

var errNoRow = errors.New("no such attempt")

func (s rowStore) FindAttemptByID(_ context.Context, id int64) (*row, error) {
	if r, ok := s[id]; ok {
		c := *r
		return &c, nil
	}
	return nil, errNoRow
}

func (s rowStore) FindOpenAttempt(_ context.Context, subject, user int64) (*row, error) {
	for _, r := range s {
		if r.Subject == subject && r.UserID == user && r.Open() {
			c := *r
			return &c, nil
		}
	}
	return nil, errNoRow
}

func (s rowStore) UpdateAttempt(ctx context.Context, id int64, change func(*row) error) (*row, error) {
	r, err := s.FindAttemptByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := change(r); err != nil {
		return nil, err
	}
	s[id] = r
	return s.FindAttemptByID(ctx, id)
}

// TestRows: the shared lifecycle ends overdue attempts as expired when it
// reads them (and says so through Ended), hides another user's attempt from
// all but admins, and claims with the domain's rule or Attempt.Claim.
func TestRows(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	errNoOpen, errBusy := errors.New("no open attempt"), errors.New("busy")
	cases := []struct {
		name       string
		status     Status
		expires    time.Time
		run        func(Rows[row, *row]) (*row, error)
		want       error
		wantNil    bool
		wantStatus Status // of the stored row
		wantEnded  bool
	}{
		{"open found", InProgress, now.Add(time.Minute), func(r Rows[row, *row]) (*row, error) { return r.FindOpen(context.Background(), 7, 1) },
			nil, false, InProgress, false},
		{"open overdue expires", InProgress, now, func(r Rows[row, *row]) (*row, error) { return r.FindOpen(context.Background(), 7, 1) },
			nil, true, Expired, true},
		{"open of another user", InProgress, now.Add(time.Minute), func(r Rows[row, *row]) (*row, error) { return r.FindOpen(context.Background(), 7, 2) },
			nil, true, InProgress, false},
		{"owner reads", InProgress, now.Add(time.Minute), func(r Rows[row, *row]) (*row, error) { return r.Owned(context.Background(), 1, 1, false) },
			nil, false, InProgress, false},
		{"another user's is not found", InProgress, now.Add(time.Minute), func(r Rows[row, *row]) (*row, error) { return r.Owned(context.Background(), 1, 2, false) },
			errNoRow, true, InProgress, false},
		{"an admin reads and expires", InProgress, now.Add(-time.Second), func(r Rows[row, *row]) (*row, error) { return r.Owned(context.Background(), 1, 2, true) },
			nil, false, Expired, true},
		{"claim for grading", InProgress, now.Add(time.Minute), func(r Rows[row, *row]) (*row, error) {
			return r.Claim(context.Background(), 7, 1, errNoOpen, nil)
		}, nil, false, Grading, false},
		{"claim without an open attempt", Submitted, now.Add(time.Minute), func(r Rows[row, *row]) (*row, error) {
			return r.Claim(context.Background(), 7, 1, errNoOpen, nil)
		}, errNoOpen, true, Submitted, false},
		{"claim refused by the domain", InProgress, now.Add(time.Minute), func(r Rows[row, *row]) (*row, error) {
			return r.Claim(context.Background(), 7, 1, errNoOpen, func(*row, time.Time) error { return errBusy })
		}, errBusy, true, InProgress, true},
		{"claim past the deadline", InProgress, now, func(r Rows[row, *row]) (*row, error) {
			return r.Claim(context.Background(), 7, 1, errNoOpen, nil)
		}, ErrExpired, true, Expired, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := rowStore{1: {Attempt: Attempt{ID: 1, UserID: 1, Status: c.status, ExpiresAt: c.expires}, Subject: 7}}
			ended := false
			rows := Rows[row, *row]{Store: store, NotFound: errNoRow, Now: func() time.Time { return now },
				Ended: func(_ context.Context, at *row) *row { ended = true; return at }}
			got, err := c.run(rows)
			if !errors.Is(err, c.want) || (got == nil) != c.wantNil {
				t.Fatalf("got %+v, %v; want nil %v, error %v", got, err, c.wantNil, c.want)
			}
			if store[1].Status != c.wantStatus || ended != c.wantEnded {
				t.Fatalf("stored %s, ended %v; want %s, %v", store[1].Status, ended, c.wantStatus, c.wantEnded)
			}
		})
	}
}

// TestRowsRelease: a failed grading gives the claim back.
func TestRowsRelease(t *testing.T) {
	since := time.Now()
	store := rowStore{1: {Attempt: Attempt{ID: 1, UserID: 1, Status: Grading, GradingSince: &since}}}
	Rows[row, *row]{Store: store, NotFound: errNoRow, Now: time.Now}.Release(context.Background(), 1)
	if store[1].Status != InProgress || store[1].GradingSince != nil {
		t.Fatalf("got %+v, want in progress", store[1].Attempt)
	}
}

// TestOwnedOf: the attempt comes with its subject for its owner and admins,
// and neither for another user.
func TestOwnedOf(t *testing.T) {
	subject := func(_ context.Context, at *row) (string, error) { return fmt.Sprintf("subject %d", at.Subject), nil }
	cases := []struct {
		name    string
		who     actor.Actor
		want    string
		wantErr error
	}{
		{"owner", actor.User(1), "subject 7", nil},
		{"admin", actor.AsAdmin(), "subject 7", nil},
		{"another user", actor.User(2), "", errNoRow},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := rowStore{1: {Attempt: Attempt{ID: 1, UserID: 1, Status: InProgress, ExpiresAt: time.Now().Add(time.Hour)}, Subject: 7}}
			rows := Rows[row, *row]{Store: store, NotFound: errNoRow, Now: time.Now}
			at, sub, err := OwnedOf(context.Background(), rows, c.who, 1, subject)
			if !errors.Is(err, c.wantErr) || sub != c.want || (at == nil) != (c.wantErr != nil) {
				t.Errorf("OwnedOf = %+v, %q, %v; want %q, %v", at, sub, err, c.want, c.wantErr)
			}
		})
	}
}
