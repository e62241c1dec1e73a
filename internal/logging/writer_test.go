package logging

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe to write from the flush timer.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestWriterBatches(t *testing.T) {
	var out lockedBuffer
	w := NewWriter(&out)
	w.Write([]byte("one\n"))
	w.Write([]byte("two\n"))
	if err := w.Flush(); err != nil || out.String() != "one\ntwo\n" {
		t.Fatalf("after Flush: %q, %v", out.String(), err)
	}

	// A full batch is written at once.
	line := strings.Repeat("x", 1023) + "\n"
	for range bufferBytes / len(line) {
		w.Write([]byte(line))
	}
	if got := len(out.String()); got != len("one\ntwo\n")+bufferBytes {
		t.Fatalf("%d bytes written after a full batch", got)
	}

	// A lone line is written by the timer.
	w.Write([]byte("late\n"))
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasSuffix(out.String(), "late\n") {
		if time.Now().After(deadline) {
			t.Fatal("a line waited for ever")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestUrgentRecordsAreWrittenAtOnce: a record at Warn or above is written as
// soon as it is logged, with the lines batched before it, also through a
// logger derived with With or WithGroup; a record below waits for its batch.
// The writer's timer is an hour away, so only the logger's Flush can write.
func TestUrgentRecordsAreWrittenAtOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		log  func(l *slog.Logger)
	}{
		{"warn", func(l *slog.Logger) { l.Warn("disk almost full") }},
		{"error", func(l *slog.Logger) { l.Error("disk full", "free", 0) }},
		{"not plain", func(l *slog.Logger) { l.Warn("disk\nfull", "err", errors.New("no space")) }},
		{"with", func(l *slog.Logger) { l.With("dev", "sda").Warn("disk almost full") }},
		{"with group", func(l *slog.Logger) { l.WithGroup("disk").With("dev", "sda").Error("full") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out lockedBuffer
			w := NewWriter(&out)
			w.delay = time.Hour
			l := New(w, slog.LevelInfo)
			l.Info("request", "status", 200)
			l.With("k", "v").Info("derived request")
			if got := out.String(); got != "" {
				t.Fatalf("info lines written before their batch: %q", got)
			}
			c.log(l)
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) != 3 || !strings.Contains(lines[0], `"msg":"request"`) || !strings.Contains(lines[2], `"level":"`) ||
				strings.Contains(lines[2], `"level":"INFO"`) {
				t.Fatalf("after the urgent record: %q", out.String())
			}
		})
	}
}
