package logging

import (
	"bytes"
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
