// Package logging is the server's log output: slog records as JSON lines,
// plain ones formatted without slog.JSONHandler's general machinery (New),
// written in batches (Writer).
package logging

import (
	"io"
	"log/slog"
	"sync"
	"time"
)

// New returns the server's logger: JSON lines on w at level and above,
// in slog.JSONHandler's format.
func New(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(newJSONHandler(w, level))
}

// Log lines wait in a Writer at most FlushDelay, and at most
// bufferBytes of them at once.
const (
	FlushDelay  = 100 * time.Millisecond
	bufferBytes = 64 << 10
)

// Writer gathers log lines and writes them to the underlying writer in
// batches: FlushDelay after the first line of a batch, as soon as
// bufferBytes have gathered, or on Flush, which the logger of New calls
// after every record at Urgent level or above. The server logs every request,
// and one write system call per line was a tenth of a request's CPU. What a
// crash of the whole process can lose is the last FlushDelay of lines;
// the program flushes before it returns.
type Writer struct {
	mu        sync.Mutex
	w         io.Writer
	buf       []byte
	scheduled bool          // a Flush is due within delay
	delay     time.Duration // FlushDelay; longer in tests
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, delay: FlushDelay} }

// Write adds p, which slog hands over as whole lines, to the batch.
func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if len(l.buf) >= bufferBytes {
		return len(p), l.flushLocked()
	}
	if !l.scheduled {
		l.scheduled = true
		time.AfterFunc(l.delay, func() { l.Flush() })
	}
	return len(p), nil
}

// Flush writes the lines gathered so far.
func (l *Writer) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.scheduled = false
	return l.flushLocked()
}

func (l *Writer) flushLocked() error {
	if len(l.buf) == 0 {
		return nil
	}
	_, err := l.w.Write(l.buf)
	if cap(l.buf) > 4*bufferBytes {
		l.buf = nil // one huge line: do not keep its memory
	} else {
		l.buf = l.buf[:0]
	}
	return err
}
