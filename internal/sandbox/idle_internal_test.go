package sandbox

import (
	"testing"
	"time"
)

func TestIdleStopAt(t *testing.T) {
	s := &Service{opt: Options{IdleTimeout: 10 * time.Minute}}
	last := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		status Status
		want   *time.Time
	}{
		{StatusRunning, ptrTime(last.Add(10 * time.Minute))},
		{StatusStopped, nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			got := s.IdleStopAt(&Container{Status: tt.status, LastActivityAt: last})
			if (got == nil) != (tt.want == nil) || (got != nil && !got.Equal(*tt.want)) {
				t.Errorf("IdleStopAt = %v; want %v", got, tt.want)
			}
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }
