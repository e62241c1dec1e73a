package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"tuxlab/internal/recording"
)

// Recordings is where recorded terminals go (*recording.Service): a
// recording is created at its first flush and extended at the next ones.
type Recordings interface {
	Begin(ctx context.Context, r *recording.Recording) error
	Append(ctx context.Context, id int64, events []byte, size int64, truncated bool, ended *time.Time) error
}

var _ Recordings = (*recording.Service)(nil)

// recorder records one session's output and resizes as asciicast v2 event
// lines ([t, "o", data] and [t, "r", "COLSxROWS"]), kept in memory and
// written to Recordings every flush interval and when the session ends,
// never once per chunk of output. Past max bytes of events, further output
// is dropped and the recording marked truncated. A nil recorder records
// nothing.
type recorder struct {
	sink  Recordings
	rec   *recording.Recording
	max   int64
	now   func() time.Time
	log   *slog.Logger
	start time.Time // the events' times count from it (on now's clock)

	mu        sync.Mutex   // guards the fields below it; never held across I/O
	pending   bytes.Buffer // events not written yet
	size      int64        // events kept: written and pending
	truncated bool
	carry     []byte // an incomplete UTF-8 character at the end of the last output

	flushMu sync.Mutex // one flush at a time; guards the fields below it
	created bool       // the recording's row exists
	failed  bool       // the store refused it: nothing more is written
}

func newRecorder(sink Recordings, rec *recording.Recording, max int64, now func() time.Time, log *slog.Logger) *recorder {
	if sink == nil || rec == nil {
		return nil
	}
	return &recorder{sink: sink, rec: rec, max: max, now: now, log: log, start: now()}
}

// on reports whether the session is recorded.
func (r *recorder) on() bool { return r != nil }

// output records p, the shell's output. A character split between two
// reads is recorded whole with the second.
func (r *recorder) output(p []byte) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	data := append(r.carry, p...)
	r.carry = nil
	if tail := incompleteTail(data); tail > 0 {
		r.carry = append([]byte(nil), data[len(data)-tail:]...)
		data = data[:len(data)-tail]
	}
	if len(data) > 0 {
		r.event("o", string(data))
	}
}

// resize records a new terminal size.
func (r *recorder) resize(cols, rows uint) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.event("r", strconv.FormatUint(uint64(cols), 10)+"x"+strconv.FormatUint(uint64(rows), 10))
}

// event appends one event line, unless it would pass the bound: then the
// recording is truncated and takes nothing more. The caller holds mu.
func (r *recorder) event(code, data string) {
	if r.truncated {
		return
	}
	secs := max(r.now().Sub(r.start), 0).Seconds()
	d, _ := json.Marshal(data) // invalid UTF-8 becomes U+FFFD
	line := make([]byte, 0, len(d)+24)
	line = append(line, '[')
	line = strconv.AppendFloat(line, secs, 'f', 6, 64)
	line = append(line, `, "`...)
	line = append(line, code...)
	line = append(line, `", `...)
	line = append(line, d...)
	line = append(line, "]\n"...)
	if r.size+int64(len(line)) > r.max {
		r.truncated = true
		return
	}
	r.size += int64(len(line))
	r.pending.Write(line)
}

// incompleteTail is how many bytes at the end of p begin a UTF-8 character
// that is not complete yet (0 to 3).
func incompleteTail(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return len(p) - i
			}
			return 0
		}
	}
	return 0
}

// keepFlushing writes what was recorded every interval until ctx ends. A
// write is not cut short when ctx ends (the session's end would otherwise
// cancel a write under way and leave the recording unsure of its row);
// each waits at most flushTimeout.
func (r *recorder) keepFlushing(ctx context.Context, every time.Duration) {
	if r == nil {
		return
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
			r.flush(fctx, false)
			cancel()
		}
	}
}

// flushTimeout bounds one write of a recording.
const flushTimeout = 10 * time.Second

// finish writes the rest and the session's end; the session's output has
// ended. It waits at most flushTimeout for the store.
func (r *recorder) finish() {
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	r.flush(ctx, true)
}

// flush writes the pending events (creating the recording the first
// time) and, when end, the end of the session. One flush runs at a time,
// and none holds the output path while it waits for the store.
func (r *recorder) flush(ctx context.Context, end bool) {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	if r.failed {
		return
	}
	r.mu.Lock()
	if end && len(r.carry) > 0 {
		carry := r.carry
		r.carry = nil
		r.event("o", string(carry))
	}
	events := bytes.Clone(r.pending.Bytes())
	r.pending.Reset()
	size, truncated := r.size, r.truncated
	r.mu.Unlock()
	if !end && len(events) == 0 {
		return
	}
	if !r.created {
		if err := r.sink.Begin(ctx, r.rec); err != nil {
			if end {
				r.fail(err)
				return
			}
			r.log.Warn("could not save a terminal recording yet: trying again at the next flush", "container_id", r.rec.ContainerID, "error", err.Error())
			r.requeue(events)
			return
		}
		r.created = true
	}
	var ended *time.Time
	if end {
		t := r.now().UTC().Truncate(time.Microsecond)
		ended = &t
	}
	if err := r.sink.Append(ctx, r.rec.ID, events, size, truncated, ended); err != nil {
		if end {
			r.fail(err)
			return
		}
		r.log.Warn("could not save a terminal recording yet: trying again at the next flush", "recording_id", r.rec.ID, "error", err.Error())
		r.requeue(events)
	}
}

// requeue puts events that were not written back before what came since.
func (r *recorder) requeue(events []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rest := bytes.Clone(r.pending.Bytes())
	r.pending.Reset()
	r.pending.Write(events)
	r.pending.Write(rest)
}

// fail gives the recording up; the caller holds flushMu.
func (r *recorder) fail(err error) {
	r.failed = true
	r.log.Warn("terminal recording lost", "container_id", r.rec.ContainerID, "error", err.Error())
}
