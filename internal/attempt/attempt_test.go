package attempt

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestClaim(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	deadline := start.Add(30 * time.Minute)
	recent, stale := deadline.Add(-time.Minute), deadline.Add(-GradingStale-time.Minute)
	cases := []struct {
		name       string
		status     Status
		grading    *time.Time
		now        time.Time
		want       error
		wantStatus Status
	}{
		{"in time", InProgress, nil, start.Add(time.Minute), nil, Grading},
		{"at the deadline", InProgress, nil, deadline, ErrExpired, Expired},
		{"past the deadline", InProgress, nil, deadline.Add(time.Hour), ErrExpired, Expired},
		{"submitted", Submitted, nil, start, ErrFinished, Submitted},
		{"expired", Expired, nil, start, ErrExpired, Expired},
		{"being graded", Grading, &recent, deadline.Add(-30 * time.Second), ErrGrading, Grading},
		{"a stale claim", Grading, &stale, deadline.Add(-30 * time.Second), nil, Grading},
	}
	for _, c := range cases {
		a := &Attempt{Status: c.status, StartedAt: start, ExpiresAt: deadline, GradingSince: c.grading}
		if err := a.Claim(c.now); !errors.Is(err, c.want) || a.Status != c.wantStatus {
			t.Errorf("%s: Claim = %v, status %s; want %v, %s", c.name, err, a.Status, c.want, c.wantStatus)
		}
	}
}

func TestFinishAndRelease(t *testing.T) {
	now := time.Now()
	a := &Attempt{Status: InProgress, ExpiresAt: now.Add(time.Hour)}
	if err := a.Claim(now); err != nil {
		t.Fatal(err)
	}
	a.Release()
	if a.Status != InProgress || a.GradingSince != nil {
		t.Fatalf("released: %+v", a)
	}
	a.Claim(now)
	a.Finish(now, 7, 10, 70)
	if a.Status != Submitted || a.Score != 70 || !a.Passed || a.FinishedAt == nil {
		t.Fatalf("finished: %+v", a)
	}
	a.Finish(now, 2, 3, 70) // 66.6 rounds down
	if a.Score != 66 || a.Passed {
		t.Fatalf("2 of 3: %+v", a)
	}
	if Score(0, 0) != 0 || Score(3, 3) != 100 {
		t.Fatal("Score edges")
	}
}

func TestTally(t *testing.T) {
	worth := []int{1, 2, 3, 4}
	passed := []bool{true, false, true, false}
	results, points := Tally(len(worth), func(i int) (string, int) {
		if passed[i] {
			return "pass", worth[i]
		}
		return "fail", 0
	})
	if want := []string{"pass", "fail", "pass", "fail"}; !slices.Equal(results, want) || points != 4 {
		t.Errorf("Tally = %v, %d; want %v, 4", results, points, want)
	}
	if results, points := Tally(0, func(int) (string, int) { return "", 1 }); len(results) != 0 || points != 0 {
		t.Errorf("Tally of nothing = %v, %d", results, points)
	}
}
