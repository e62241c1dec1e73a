package app

import (
	"io"
	"log/slog"
)

// NewLogger returns the server's logger: JSON lines on w at level and above.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}
