package logging

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// slogLine is what slog.JSONHandler writes for r.
func slogLine(t testing.TB, r slog.Record) string {
	var buf bytes.Buffer
	if err := slog.NewJSONHandler(&buf, nil).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// handled is what the server's handler writes for r, and whether it took the fast path.
func handled(t testing.TB, r slog.Record) (string, bool) {
	_, fast := appendRecord(nil, r)
	var buf bytes.Buffer
	if err := newJSONHandler(&buf, slog.LevelDebug).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return buf.String(), fast
}

func record(msg string, attrs ...slog.Attr) slog.Record {
	r := slog.NewRecord(time.Date(2026, 11, 23, 12, 0, 0, 123456789, time.UTC), slog.LevelInfo, msg, 0)
	r.AddAttrs(attrs...)
	return r
}

// accessLine is a record shaped as the server's access line.
func accessLine() slog.Record {
	return record("request",
		slog.String("request_id", "0123456789abcdef01234567"),
		slog.Attr{Key: "request", Value: slog.GroupValue(slog.String("method", "GET"), slog.String("path", "/api/auth/me"),
			slog.String("route", "GET /api/auth/me"), slog.String("remote", "127.0.0.1"))},
		slog.Attr{Key: "response", Value: slog.GroupValue(slog.Int("status", 200), slog.Int64("bytes", 125),
			slog.Float64("duration_ms", 0.123))})
}

func TestFastLogLinesMatchSlog(t *testing.T) {
	access := accessLine()
	zeroTime := record("no time", slog.Int("n", 1))
	zeroTime.Time = time.Time{}
	local := record("local time")
	local.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", -(3*3600+30*60)))
	future := record("far future")
	future.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	warn := record("warned", slog.Bool("ok", false), slog.Uint64("u", math.MaxUint64), slog.Int64("i", math.MinInt64))
	warn.Level = slog.LevelWarn + 2

	for name, c := range map[string]struct {
		r    slog.Record
		fast bool
	}{
		"access line":     {access, true},
		"no attributes":   {record("serving"), true},
		"no time":         {zeroTime, true},
		"other zone":      {local, true},
		"year 10000":      {future, false},
		"levels":          {warn, true},
		"durations":       {record("d", slog.Duration("grace", 20*time.Second)), true},
		"floats":          {record("f", slog.Float64("a", 0), slog.Float64("b", 1e-6), slog.Float64("c", 123456.789), slog.Float64("d", -2.5), slog.Float64("e", 1e20)), true},
		"nested groups":   {record("g", slog.Group("a", slog.Group("b", slog.String("c", "d")))), true},
		"html characters": {record("<b> & </b>", slog.String("k", "a<b>&c")), true},
		"tiny float":      {record("f", slog.Float64("x", 1e-7)), false},
		"huge float":      {record("f", slog.Float64("x", 1e21)), false},
		"not a number":    {record("f", slog.Float64("x", math.NaN())), false},
		"quote":           {record("f", slog.String("x", `say "hi"`)), false},
		"newline in msg":  {record("two\nlines"), false},
		"unicode":         {record("f", slog.String("x", "é")), false},
		"invalid utf-8":   {record("f", slog.String("x", "\xff")), false},
		"line separator":  {record("f", slog.String("x", "a\u2028b")), false},
		"empty key":       {record("f", slog.String("", "x")), false},
		"empty group":     {record("f", slog.Group("g")), true}, // AddAttrs drops it
		"inline group":    {record("f", slog.Group("", slog.String("a", "b"))), false},
		"error":           {record("f", slog.Any("error", errors.New("boom"))), false},
		"any":             {record("f", slog.Any("list", []int{1, 2})), false},
		"time value":      {record("f", slog.Time("at", time.Unix(0, 0))), false},
		"empty attr":      {record("f", slog.Attr{}), false},
	} {
		got, fast := handled(t, c.r)
		if want := slogLine(t, c.r); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
		if fast != c.fast {
			t.Errorf("%s: fast path %v, want %v", name, fast, c.fast)
		}
	}
}

// FuzzFastLogLines checks that the fast path writes what slog.JSONHandler
// writes for any message, key, string and number.
func FuzzFastLogLines(f *testing.F) {
	f.Add("request", "path", "/api/auth/me", int64(200), 0.123, true)
	f.Add("a\tb", "k\"", "\x00", int64(-1), 1e-7, false)
	f.Fuzz(func(t *testing.T, msg, key, value string, n int64, x float64, nested bool) {
		attrs := []slog.Attr{slog.String(key, value), slog.Int64("n", n), slog.Float64("x", x)}
		if nested {
			attrs = []slog.Attr{slog.Attr{Key: key, Value: slog.GroupValue(attrs...)}}
		}
		r := record(msg, attrs...)
		got, _ := handled(t, r)
		if want := slogLine(t, r); got != want {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkAccessLine measures the server's handler on the access line;
// BenchmarkAccessLineSlog measures slog.JSONHandler on the same record.
func BenchmarkAccessLine(b *testing.B) { benchAccessLine(b, newJSONHandler(discard{}, slog.LevelInfo)) }

func BenchmarkAccessLineSlog(b *testing.B) { benchAccessLine(b, slog.NewJSONHandler(discard{}, nil)) }

func benchAccessLine(b *testing.B, h slog.Handler) {
	r := accessLine()
	b.ReportAllocs()
	for b.Loop() {
		h.Handle(context.Background(), r)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestLogTimeMatchesRFC3339Nano: log times, cached a second at a time, are
// written as time.RFC3339Nano writes them, in any zone and with any fraction,
// also when lines of different seconds and zones alternate.
func TestLogTimeMatchesRFC3339Nano(t *testing.T) {
	east, west := time.FixedZone("E", 5*3600+45*60), time.FixedZone("W", -8*3600)
	base := time.Date(2026, 11, 23, 23, 59, 59, 0, time.UTC)
	var times []time.Time
	for _, ns := range []int{0, 1, 10, 100000, 120000000, 999999999, 500} {
		at := base.Add(time.Duration(ns))
		times = append(times, at, at.In(east), at.In(west), at.Add(time.Second), at.Local(), at.Add(-time.Hour*24*400))
	}
	for _, at := range times {
		if got, ok := appendLogTime(nil, at); !ok || string(got) != at.Format(time.RFC3339Nano) {
			t.Errorf("%v: got %s (%v), want %s", at, got, ok, at.Format(time.RFC3339Nano))
		}
	}
}

// FuzzLogTime checks appendLogTime against time.RFC3339Nano for any instant
// of slog's range of years and any zone offset.
func FuzzLogTime(f *testing.F) {
	f.Add(int64(1795478399), int64(123456789), 3600)
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int) {
		at := time.Unix(sec%253402300799, nsec%1e9).In(time.FixedZone("Z", offset%(18*3600)))
		inRange := at.Year() >= 0 && at.Year() <= 9999
		for range 2 { // once formatting the second, once from the cache
			got, ok := appendLogTime(nil, at)
			if ok != inRange || ok && string(got) != at.Format(time.RFC3339Nano) {
				t.Fatalf("%v: got %s (%v), want %s", at, got, ok, at.Format(time.RFC3339Nano))
			}
		}
	})
}

// TestMillisMatchStrconv: for whole thousandths, the short path writes what
// strconv's shortest formatting writes, every value up to ±2,000,000
// thousandths and samples beyond, to the limit where it stops applying.
func TestMillisMatchStrconv(t *testing.T) {
	check := func(k int64) {
		f := float64(k) / 1000
		want := strconv.AppendFloat(nil, f, 'f', -1, 64)
		if got, ok := appendFloat(nil, f); !ok || string(got) != string(want) {
			t.Fatalf("%d/1000: got %s, want %s", k, got, want)
		}
	}
	for k := int64(-2_000_000); k <= 2_000_000; k++ {
		check(k)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		check(r.Int64N(1e15) * (1 - 2*r.Int64N(2)))
	}
	// -0 and values that are not whole thousandths take strconv's path.
	for _, f := range []float64{math.Copysign(0, -1), 0.0001, 1.0 / 3, 2.5e-3 + 1e-12} {
		want := strconv.AppendFloat(nil, f, 'f', -1, 64)
		if got, _ := appendFloat(nil, f); string(got) != string(want) {
			t.Errorf("%v: got %s, want %s", f, got, want)
		}
	}
}
