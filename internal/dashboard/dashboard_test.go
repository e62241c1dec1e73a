package dashboard

import (
	"testing"
	"time"
)

func TestStreaks(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name             string
		times            []string
		now              string
		loc              *time.Location
		current, longest int
	}{
		{"nothing yet", nil, "2026-03-05T12:00:00Z", time.UTC, 0, 0},
		{"today only", []string{"2026-03-05T08:00:00Z"}, "2026-03-05T12:00:00Z", time.UTC, 1, 1},
		{"three days to today", []string{"2026-03-03T23:59:00Z", "2026-03-04T00:01:00Z", "2026-03-05T10:00:00Z"}, "2026-03-05T12:00:00Z", time.UTC, 3, 3},
		{"alive until the end of tomorrow", []string{"2026-03-03T10:00:00Z", "2026-03-04T10:00:00Z"}, "2026-03-05T23:59:00Z", time.UTC, 2, 2},
		{"broken by a day without", []string{"2026-03-01T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-03T10:00:00Z", "2026-03-05T10:00:00Z"}, "2026-03-05T12:00:00Z", time.UTC, 1, 3},
		{"lapsed", []string{"2026-03-01T10:00:00Z", "2026-03-02T10:00:00Z"}, "2026-03-05T12:00:00Z", time.UTC, 0, 2},
		// 23:30 UTC on the 4th is already the 5th in Berlin: two days there, one apart in UTC.
		{"days of the learner's zone", []string{"2026-03-04T08:00:00Z", "2026-03-04T23:30:00Z"}, "2026-03-05T09:00:00Z", berlin, 2, 2},
		{"the same instants in UTC", []string{"2026-03-04T08:00:00Z", "2026-03-04T23:30:00Z"}, "2026-03-05T09:00:00Z", time.UTC, 1, 1},
		{"across a month and a DST change", []string{"2026-03-28T12:00:00Z", "2026-03-29T12:00:00Z", "2026-03-30T12:00:00Z", "2026-03-31T12:00:00Z", "2026-04-01T12:00:00Z"}, "2026-04-01T13:00:00Z", berlin, 5, 5},
	}
	for _, c := range cases {
		var times []time.Time
		for _, s := range c.times {
			times = append(times, at(s))
		}
		cur, long := Streaks(times, at(c.now), c.loc)
		if cur != c.current || long != c.longest {
			t.Errorf("%s: current %d, longest %d; want %d, %d", c.name, cur, long, c.current, c.longest)
		}
	}
}
