package sandbox_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/sandboxtest"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// TestNetworkCheckRemovesProbeLeftovers: the network check's throwaway
// containers left by a process that died are removed by the next check:
// this install's at once, another install's (a killed test run) once they
// are old enough that no check of theirs can still be under way.
func TestNetworkCheckRemovesProbeLeftovers(t *testing.T) {
	t.Parallel()
	f := sandboxtest.NewFixture(t, storetest.Open(t, store.SQLite))
	now := time.Now()
	mine := f.Service.Instance()
	leftovers := []struct {
		id       string
		instance string
		running  bool
		age      time.Duration
		removed  bool
	}{
		{"mine-stopped", mine, false, time.Minute, true},
		{"mine-running", mine, true, time.Hour, false},
		{"other-old", "0123456789abcdef", false, time.Hour, true},
		{"other-young", "0123456789abcdef", false, time.Minute, false},
		{"other-running", "0123456789abcdef", true, time.Hour, false},
	}
	f.Engine.ListFn = func(_ context.Context, labels map[string]string) ([]sandbox.Instance, error) {
		if labels[sandbox.LabelManaged] != "probe" {
			return nil, nil
		}
		var out []sandbox.Instance
		for _, l := range leftovers {
			if in, ok := labels[sandbox.LabelInstance]; ok && in != l.instance {
				continue // the engine filters by every label asked for
			}
			out = append(out, sandbox.Instance{EngineID: l.id,
				Labels: map[string]string{sandbox.LabelManaged: "probe", sandbox.LabelInstance: l.instance},
				State:  sandbox.State{Running: l.running}})
		}
		return out, nil
	}
	f.Engine.InspectFn = func(_ context.Context, id string) (sandbox.State, error) {
		for _, l := range leftovers {
			if l.id == id {
				return sandbox.State{Running: l.running, Created: now.Add(-l.age)}, nil
			}
		}
		return sandbox.State{}, sandbox.ErrGone
	}
	var removed []string
	f.Engine.RemoveFn = func(_ context.Context, id string) error { removed = append(removed, id); return nil }
	// The check itself stops at its network: only the clean-up is under test.
	stop := errors.New("no network in this test")
	f.Engine.EnsureNetworkFn = func(context.Context, string, map[string]string) error { return stop }
	f.Engine.RemoveNetworkFn = func(context.Context, string) error { return nil }

	if _, err := f.Service.CheckIsolation(context.Background()); !errors.Is(err, stop) {
		t.Fatalf("CheckIsolation: %v", err)
	}
	for _, l := range leftovers {
		if got := slices.Contains(removed, l.id); got != l.removed {
			t.Errorf("%s: removed %v, want %v", l.id, got, l.removed)
		}
	}
}
