package logging

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// jsonHandler is slog.JSONHandler with a fast path for plain records, which
// are most of what the server logs, its access line first of all: a record
// whose strings need no escaping and whose values are strings, numbers,
// booleans, durations or groups of them is written by appendRecord, in
// exactly the bytes slog.JSONHandler would write (TestFastLogLinesMatchSlog,
// FuzzFastLogLines). Anything else, and every handler derived with WithAttrs
// or WithGroup, is slog.JSONHandler's. The access line cost a request about
// as much as the rest of its handling; written here it costs a fraction.
type jsonHandler struct {
	*slog.JSONHandler
	out *lockedWriter // shared with the JSONHandler, so lines never interleave
}

func newJSONHandler(w io.Writer, level slog.Level) *jsonHandler {
	out := &lockedWriter{w: w}
	return &jsonHandler{JSONHandler: slog.NewJSONHandler(out, &slog.HandlerOptions{Level: level}), out: out}
}

// Handle writes r, through the fast path when r is plain, and at once when
// r is urgent (see flushUrgent).
func (h *jsonHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.handle(ctx, r)
	return errors.Join(err, h.out.flushUrgent(r.Level))
}

// WithAttrs returns slog.JSONHandler's handler with attrs, which writes
// urgent records at once too.
func (h *jsonHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &derivedHandler{Handler: h.JSONHandler.WithAttrs(attrs), out: h.out}
}

// WithGroup returns slog.JSONHandler's handler with group name, which
// writes urgent records at once too.
func (h *jsonHandler) WithGroup(name string) slog.Handler {
	return &derivedHandler{Handler: h.JSONHandler.WithGroup(name), out: h.out}
}

func (h *jsonHandler) handle(ctx context.Context, r slog.Record) error {
	bp := lineBuffers.Get().(*[]byte)
	line, ok := appendRecord((*bp)[:0], r)
	if ok {
		_, err := h.out.Write(line)
		if cap(line) <= 64<<10 {
			*bp = line[:0]
			lineBuffers.Put(bp)
		}
		return err
	}
	lineBuffers.Put(bp)
	return h.JSONHandler.Handle(ctx, r)
}

// derivedHandler is a handler derived with WithAttrs or WithGroup: slog's,
// flushing urgent records like jsonHandler.
type derivedHandler struct {
	slog.Handler
	out *lockedWriter
}

// Handle writes r, at once when r is urgent.
func (d *derivedHandler) Handle(ctx context.Context, r slog.Record) error {
	err := d.Handler.Handle(ctx, r)
	return errors.Join(err, d.out.flushUrgent(r.Level))
}

// WithAttrs implements slog.Handler.
func (d *derivedHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &derivedHandler{Handler: d.Handler.WithAttrs(attrs), out: d.out}
}

// WithGroup implements slog.Handler.
func (d *derivedHandler) WithGroup(name string) slog.Handler {
	return &derivedHandler{Handler: d.Handler.WithGroup(name), out: d.out}
}

// Urgent is the level from which a record is not left waiting in a batch:
// a warning or an error is written, with the lines before it, as soon as it
// is logged, so that a crash right after it cannot lose it.
const Urgent = slog.LevelWarn

// flushUrgent flushes the underlying writer, if it batches (as Writer does),
// when a record at level is urgent.
func (l *lockedWriter) flushUrgent(level slog.Level) error {
	if level < Urgent {
		return nil
	}
	if f, ok := l.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// lineBuffers keeps the fast path's line buffers between records.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// appendRecord appends r as slog.JSONHandler writes it, with a newline, and
// reports whether r was plain enough to do so here.
func appendRecord(b []byte, r slog.Record) ([]byte, bool) {
	b = append(b, '{')
	if !r.Time.IsZero() {
		b = append(b, `"time":"`...)
		var ok bool
		if b, ok = appendLogTime(b, r.Time); !ok {
			return b, false
		}
		b = append(b, `",`...)
	}
	b = append(b, `"level":"`...)
	b = append(b, r.Level.String()...)
	b = append(b, `","msg":`...)
	if !plain(r.Message) {
		return b, false
	}
	b = appendString(b, r.Message)
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		b = append(b, ',')
		b, ok = appendAttr(b, a)
		return ok
	})
	return append(b, "}\n"...), ok
}

// logSecond is one second of log time in one location, formatted once: the
// lines of that second share it.
type logSecond struct {
	unix int64
	loc  *time.Location
	date []byte // 2006-01-02T15:04:05
	zone []byte // Z07:00
}

var lastLogSecond atomic.Pointer[logSecond]

// appendLogTime appends t as t.AppendFormat(b, time.RFC3339Nano) does, which
// is how slog.JSONHandler writes a record's time, and reports false for a
// year outside 0 to 9999, which slog writes with an error. The date and zone
// are formatted (and the year checked) once a second; only the fraction is
// written for every line.
func appendLogTime(b []byte, t time.Time) ([]byte, bool) {
	sec := lastLogSecond.Load()
	if sec == nil || sec.unix != t.Unix() || sec.loc != t.Location() {
		if y := t.Year(); y < 0 || y > 9999 {
			return b, false
		}
		sec = &logSecond{unix: t.Unix(), loc: t.Location(),
			date: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z07:00")}
		lastLogSecond.Store(sec)
	}
	b = append(b, sec.date...)
	if ns := t.Nanosecond(); ns > 0 {
		// .999999999: nine digits, less the trailing zeros.
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i > 0; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := len(frac)
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, sec.zone...), true
}

// appendAttr appends `"key":value` for a plain attribute.
func appendAttr(b []byte, a slog.Attr) ([]byte, bool) {
	if a.Key == "" || !plain(a.Key) {
		return b, false // an empty key is dropped or inlined by slog
	}
	b = appendString(b, a.Key)
	b = append(b, ':')
	v := a.Value
	switch v.Kind() {
	case slog.KindString:
		s := v.String()
		return appendString(b, s), plain(s)
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10), true
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10), true
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool()), true
	case slog.KindDuration:
		return strconv.AppendInt(b, int64(v.Duration()), 10), true
	case slog.KindFloat64:
		return appendFloat(b, v.Float64())
	case slog.KindGroup:
		attrs := v.Group()
		if len(attrs) == 0 {
			return b, false // slog leaves an empty group out
		}
		b = append(b, '{')
		for i, ga := range attrs {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendAttr(b, ga); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false // times, any values, LogValuers: slog's own rules
}

// appendFloat appends f as encoding/json writes it, for the values it
// writes without an exponent.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if a := math.Abs(f); math.IsNaN(f) || math.IsInf(f, 0) || (a != 0 && (a < 1e-6 || a >= 1e21)) {
		return b, false
	}
	if k := math.Round(f * 1000); k != 0 && math.Abs(k) < 1e15 && k/1000 == f {
		return appendMillis(b, int64(k)), true
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), true
}

// appendMillis appends k/1000 in decimal, as strconv.AppendFloat(b,
// float64(k)/1000, 'f', -1, 64) would: the access line's duration_ms is
// such a number, and the shortest decimal of the float nearest k/1000 is
// k/1000 itself (TestMillisMatchStrconv), found here without strconv's
// general search.
func appendMillis(b []byte, k int64) []byte {
	if k < 0 {
		b = append(b, '-')
		k = -k
	}
	b = strconv.AppendInt(b, k/1000, 10)
	if frac := k % 1000; frac != 0 {
		digits := [4]byte{'.', byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
		n := len(digits)
		for digits[n-1] == '0' {
			n--
		}
		b = append(b, digits[:n]...)
	}
	return b
}

// appendString appends s in quotes; the caller checks that s is plain.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plain reports whether s is printable ASCII without a quote or backslash:
// a JSON string body exactly as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
