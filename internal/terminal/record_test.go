package terminal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"tuxlab/internal/recording"
)

// memRecordings keeps recordings in memory, as the store would.
type memRecordings struct {
	mu        sync.Mutex
	begun     int
	events    bytes.Buffer
	size      int64
	truncated bool
	ended     *time.Time
	failNext  bool
	failBegin bool
}

func (m *memRecordings) Begin(_ context.Context, r *recording.Recording) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failBegin {
		m.failBegin = false
		return errors.New("the database does not answer")
	}
	m.begun++
	r.ID = 7
	return nil
}

func (m *memRecordings) Append(_ context.Context, id int64, events []byte, size int64, truncated bool, ended *time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failNext {
		m.failNext = false
		return errors.New("the database does not answer")
	}
	if id != 7 {
		return errors.New("an unknown recording")
	}
	m.events.Write(events)
	m.size, m.truncated, m.ended = size, truncated, ended
	return nil
}

// castEvent is one event line of a cast.
type castEvent struct {
	T    float64
	Code string
	Data string
}

func parseEvents(t *testing.T, b []byte) []castEvent {
	t.Helper()
	var out []castEvent
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var raw []any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil || len(raw) != 3 {
			t.Fatalf("event line %q: %v", sc.Text(), err)
		}
		tm, ok1 := raw[0].(float64)
		code, ok2 := raw[1].(string)
		data, ok3 := raw[2].(string)
		if !ok1 || !ok2 || !ok3 {
			t.Fatalf("event line %q has the wrong types", sc.Text())
		}
		out = append(out, castEvent{tm, code, data})
	}
	return out
}

func testRecorder(sink Recordings, max int64, now func() time.Time) *recorder {
	rec := &recording.Recording{ContainerID: 1, Width: 80, Height: 24, StartedAt: now()}
	return newRecorder(sink, rec, max, now, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// TestRecorderEvents: output and resizes become asciicast v2 event lines in
// order, timed from the start; a character split between two reads is
// recorded whole; a flush that fails (making the recording, or adding to
// it) is tried again with nothing lost.
func TestRecorderEvents(t *testing.T) {
	start := time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)
	clock := start
	now := func() time.Time { return clock }
	sink := &memRecordings{}
	r := testRecorder(sink, 1<<20, now)

	clock = start.Add(500 * time.Millisecond)
	r.output([]byte("hello \xc3")) // "é" split in two reads
	sink.failBegin = true
	r.flush(context.Background(), false)
	r.output([]byte("\xa9 world\r\n"))
	sink.failNext = true
	r.flush(context.Background(), false)
	clock = start.Add(2 * time.Second)
	r.resize(120, 40)
	r.flush(context.Background(), false)
	r.output([]byte("bye\xe2\x82")) // ends on half a character
	r.finish()

	if sink.begun != 1 || sink.ended == nil || sink.truncated {
		t.Fatalf("begun %d, ended %v, truncated %v", sink.begun, sink.ended, sink.truncated)
	}
	got := parseEvents(t, sink.events.Bytes())
	want := []castEvent{{0.5, "o", "hello "}, {0.5, "o", "é world\r\n"}, {2, "r", "120x40"}, {2, "o", "bye"}, {2, "o", "\ufffd\ufffd"}}
	if len(got) != len(want) {
		t.Fatalf("events %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("event %d is %+v, want %+v", i, got[i], want[i])
		}
	}
	if sink.size != int64(sink.events.Len()) {
		t.Fatalf("size %d, stored %d", sink.size, sink.events.Len())
	}
}

// TestRecorderBound: past its bound a recording takes nothing more and is
// marked truncated; what it kept stays whole lines.
func TestRecorderBound(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC) }
	sink := &memRecordings{}
	r := testRecorder(sink, 100, now)
	for range 10 {
		r.output([]byte("0123456789"))
	}
	r.finish()
	if !sink.truncated {
		t.Fatal("not marked truncated")
	}
	if sink.events.Len() > 100 || sink.size != int64(sink.events.Len()) {
		t.Fatalf("stored %d bytes (size %d), bound 100", sink.events.Len(), sink.size)
	}
	got := parseEvents(t, sink.events.Bytes())
	if len(got) == 0 || len(got) >= 10 {
		t.Fatalf("%d events kept", len(got))
	}
	for _, e := range got {
		if e.Data != "0123456789" {
			t.Fatalf("event %+v", e)
		}
	}
}

// TestRecorderNil: a session that is not recorded has a nil recorder,
// which does nothing.
func TestRecorderNil(t *testing.T) {
	r := newRecorder(nil, &recording.Recording{}, 100, time.Now, slog.Default())
	if r.on() {
		t.Fatal("a recorder without a store")
	}
	r.output([]byte("x"))
	r.resize(1, 1)
	r.finish()
}
