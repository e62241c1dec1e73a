package app

import (
	"io"
	"log/slog"
	"sync"
	"time"
)

// NewLogger returns the server's logger: JSON lines on w at level and above,
// in slog.JSONHandler's format.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(newJSONHandler(w, level))
}

// Log lines wait in a LogWriter at most LogFlushDelay, and at most
// logBufferBytes of them at once.
const (
	LogFlushDelay  = 100 * time.Millisecond
	logBufferBytes = 64 << 10
)

// LogWriter gathers log lines and writes them to the underlying writer in
// batches: LogFlushDelay after the first line of a batch, as soon as
// logBufferBytes have gathered, or on Flush. The server logs every request,
// and one write system call per line was a tenth of a request's CPU. What a
// crash of the whole process can lose is the last LogFlushDelay of lines;
// the program flushes before it returns.
type LogWriter struct {
	mu        sync.Mutex
	w         io.Writer
	buf       []byte
	scheduled bool // a Flush is due within LogFlushDelay
}

// NewLogWriter returns a LogWriter writing to w.
func NewLogWriter(w io.Writer) *LogWriter { return &LogWriter{w: w} }

// Write adds p, which slog hands over as whole lines, to the batch.
func (l *LogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if len(l.buf) >= logBufferBytes {
		return len(p), l.flushLocked()
	}
	if !l.scheduled {
		l.scheduled = true
		time.AfterFunc(LogFlushDelay, func() { l.Flush() })
	}
	return len(p), nil
}

// Flush writes the lines gathered so far.
func (l *LogWriter) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.scheduled = false
	return l.flushLocked()
}

func (l *LogWriter) flushLocked() error {
	if len(l.buf) == 0 {
		return nil
	}
	_, err := l.w.Write(l.buf)
	if cap(l.buf) > 4*logBufferBytes {
		l.buf = nil // one huge line: do not keep its memory
	} else {
		l.buf = l.buf[:0]
	}
	return err
}
