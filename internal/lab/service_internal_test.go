package lab

import (
	"errors"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/errs"
)

// TestAllowStart: past AttemptsPerDay starts in 24 hours a start waits until
// the oldest start that counts is a day old, and the detail says how long.
func TestAllowStart(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	cases := []struct {
		name    string
		perDay  int
		started []time.Time
		wait    time.Duration // 0: allowed
		says    string
	}{
		{"none yet", 2, nil, 0, ""},
		{"below the limit", 2, []time.Time{ago(time.Hour)}, 0, ""},
		{"at the limit", 2, []time.Time{ago(23 * time.Hour), ago(time.Hour)}, time.Hour, "in 1 h 00 min"},
		{"the oldest that counts", 1, []time.Time{ago(20 * time.Hour), ago(90 * time.Minute)}, 22*time.Hour + 30*time.Minute, "in 22 h 30 min"},
		{"a day old to the second", 1, []time.Time{ago(24*time.Hour - time.Millisecond)}, time.Second, "in 1 min"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewService(nil, nil, Options{AttemptsPerDay: c.perDay})
			err := s.allowStart(now)(c.started)
			if c.wait == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *errs.Error
			if !errors.As(err, &e) || e.Kind != errs.TooManyRequests || e.RetryAfter != c.wait || !strings.HasSuffix(e.Detail, c.says) {
				t.Fatalf("got %#v, want 429 after %s saying %q", err, c.wait, c.says)
			}
		})
	}
}
