package sandboxtest_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/sandboxtest"
)

// TestFakeUnsetMethods: a fake with no function fields answers every method
// with ErrNotSet, naming the method, and never panics.
func TestFakeUnsetMethods(t *testing.T) {
	ctx := context.Background()
	var rt sandbox.Runtime = &sandboxtest.Runtime{}
	var sess sandbox.Session = &sandboxtest.Session{}
	calls := []struct {
		name string
		call func() error
	}{
		{"Ping", func() error { return rt.Ping(ctx) }},
		{"ImageExists", func() error { _, err := rt.ImageExists(ctx, "i"); return err }},
		{"EnsureNetwork", func() error { return rt.EnsureNetwork(ctx, "n", nil) }},
		{"RemoveNetwork", func() error { return rt.RemoveNetwork(ctx, "n") }},
		{"ProbeDiskQuota", func() error { return rt.ProbeDiskQuota(ctx, "i") }},
		{"DiskUsage", func() error { _, err := rt.DiskUsage(ctx, nil); return err }},
		{"Create", func() error { _, err := rt.Create(ctx, sandbox.Spec{}); return err }},
		{"Start", func() error { return rt.Start(ctx, "e") }},
		{"Stop", func() error { return rt.Stop(ctx, "e", 0) }},
		{"Remove", func() error { return rt.Remove(ctx, "e") }},
		{"Inspect", func() error { _, err := rt.Inspect(ctx, "e"); return err }},
		{"List", func() error { _, err := rt.List(ctx, nil); return err }},
		{"Exec", func() error { _, err := rt.Exec(ctx, "e", sandbox.ExecSpec{}); return err }},
		{"ToolsVolume", func() error { _, err := rt.ToolsVolume(ctx, "i"); return err }},
		{"Changes", func() error { _, err := rt.Changes(ctx, "e"); return err }},
		{"Run", func() error { _, err := rt.Run(ctx, "e", sandbox.ExecSpec{}, nil, io.Discard, io.Discard); return err }},
		{"Session.Read", func() error { _, err := sess.Read(nil); return err }},
		{"Session.Write", func() error { _, err := sess.Write(nil); return err }},
		{"Session.Resize", func() error { return sess.Resize(ctx, 1, 1) }},
		{"Session.Wait", func() error { _, err := sess.Wait(ctx); return err }},
	}
	for _, c := range calls {
		err := c.call()
		if !errors.Is(err, sandboxtest.ErrNotSet) || err.Error() != sandboxtest.ErrNotSet.Error()+": "+c.name {
			t.Errorf("%s on an empty fake = %v; want ErrNotSet naming it", c.name, err)
		}
	}
	if err := sess.Close(); err != nil {
		t.Errorf("Close on an empty fake session = %v; want nil", err)
	}
	gone := &sandboxtest.Runtime{StartFn: func(context.Context, string) error { return sandbox.ErrGone }}
	if err := gone.Start(ctx, "e"); !errors.Is(err, sandbox.ErrGone) {
		t.Errorf("Start with StartFn = %v; want StartFn's answer", err)
	}
}
