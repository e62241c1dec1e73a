package activity

import (
	"log/slog"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	var now func() time.Time
	var log *slog.Logger
	var l Log
	Defaults(&now, &log, &l)
	if now == nil || log != slog.Default() || l != Discard {
		t.Errorf("Defaults left the clock set %t, log %v, activity %v", now != nil, log, l)
	}
	fixed := func() time.Time { return time.Unix(1, 0) }
	own := slog.New(slog.DiscardHandler)
	kept := Log(discard{})
	now, log, l = fixed, own, kept
	Defaults(&now, &log, &l)
	if !now().Equal(time.Unix(1, 0)) || log != own || l != kept {
		t.Error("Defaults replaced options that were set")
	}
}
