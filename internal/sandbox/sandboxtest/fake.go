// Package sandboxtest tests sandbox.Runtime drivers and helps test what sits
// on them: RunContract is the behaviour every driver must have, checked
// against a real engine, and Runtime and Session are fakes made of function
// fields, so that tests of the sandbox service, labs and exams can make an
// engine fail exactly where they want without one.
package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"tuxlab/internal/sandbox"
)

// ErrNotSet is what a fake's method returns when its function field is nil:
// the test called something it did not expect.
var ErrNotSet = errors.New("sandboxtest: fake method not set")

func notSet(method string) error { return fmt.Errorf("%w: %s", ErrNotSet, method) }

// Runtime is a sandbox.Runtime whose every method calls the function field
// of the same name with Fn appended. A nil field makes the method return an
// error wrapping ErrNotSet (and zero values), never panic.
type Runtime struct {
	PingFn           func(ctx context.Context) error
	ImageExistsFn    func(ctx context.Context, image string) (bool, error)
	EnsureNetworkFn  func(ctx context.Context, name string, labels map[string]string) error
	RemoveNetworkFn  func(ctx context.Context, name string) error
	ProbeDiskQuotaFn func(ctx context.Context, image string) error
	WaitReadyFn      func(ctx context.Context, engineID string) error
	DiskUsageFn      func(ctx context.Context, engineIDs []string) (map[string]int64, error)
	CreateFn         func(ctx context.Context, s sandbox.Spec) (string, error)
	StartFn          func(ctx context.Context, engineID string) error
	StopFn           func(ctx context.Context, engineID string, grace time.Duration) error
	RemoveFn         func(ctx context.Context, engineID string) error
	InspectFn        func(ctx context.Context, engineID string) (sandbox.State, error)
	ListFn           func(ctx context.Context, labels map[string]string) ([]sandbox.Instance, error)
	ExecFn           func(ctx context.Context, engineID string, s sandbox.ExecSpec) (sandbox.Session, error)
	ToolsVolumeFn    func(ctx context.Context, image string) (string, error)
	ChangesFn        func(ctx context.Context, engineID string) ([]sandbox.Change, error)
	RunFn            func(ctx context.Context, engineID string, s sandbox.ExecSpec, stdin io.Reader, stdout, stderr io.Writer) (int, error)
}

var _ sandbox.Runtime = (*Runtime)(nil)

// Ping calls PingFn.
func (r *Runtime) Ping(ctx context.Context) error {
	if r.PingFn == nil {
		return notSet("Ping")
	}
	return r.PingFn(ctx)
}

// ImageExists calls ImageExistsFn.
func (r *Runtime) ImageExists(ctx context.Context, image string) (bool, error) {
	if r.ImageExistsFn == nil {
		return false, notSet("ImageExists")
	}
	return r.ImageExistsFn(ctx, image)
}

// EnsureNetwork calls EnsureNetworkFn.
func (r *Runtime) EnsureNetwork(ctx context.Context, name string, labels map[string]string) error {
	if r.EnsureNetworkFn == nil {
		return notSet("EnsureNetwork")
	}
	return r.EnsureNetworkFn(ctx, name, labels)
}

// RemoveNetwork calls RemoveNetworkFn.
func (r *Runtime) RemoveNetwork(ctx context.Context, name string) error {
	if r.RemoveNetworkFn == nil {
		return notSet("RemoveNetwork")
	}
	return r.RemoveNetworkFn(ctx, name)
}

// WaitReady calls WaitReadyFn; without one a sandbox is ready at once, as a
// container is.
func (r *Runtime) WaitReady(ctx context.Context, engineID string) error {
	if r.WaitReadyFn == nil {
		return ctx.Err()
	}
	return r.WaitReadyFn(ctx, engineID)
}

// ProbeDiskQuota calls ProbeDiskQuotaFn.
func (r *Runtime) ProbeDiskQuota(ctx context.Context, image string) error {
	if r.ProbeDiskQuotaFn == nil {
		return notSet("ProbeDiskQuota")
	}
	return r.ProbeDiskQuotaFn(ctx, image)
}

// DiskUsage calls DiskUsageFn.
func (r *Runtime) DiskUsage(ctx context.Context, engineIDs []string) (map[string]int64, error) {
	if r.DiskUsageFn == nil {
		return nil, notSet("DiskUsage")
	}
	return r.DiskUsageFn(ctx, engineIDs)
}

// Create calls CreateFn.
func (r *Runtime) Create(ctx context.Context, s sandbox.Spec) (string, error) {
	if r.CreateFn == nil {
		return "", notSet("Create")
	}
	return r.CreateFn(ctx, s)
}

// Start calls StartFn.
func (r *Runtime) Start(ctx context.Context, engineID string) error {
	if r.StartFn == nil {
		return notSet("Start")
	}
	return r.StartFn(ctx, engineID)
}

// Stop calls StopFn.
func (r *Runtime) Stop(ctx context.Context, engineID string, grace time.Duration) error {
	if r.StopFn == nil {
		return notSet("Stop")
	}
	return r.StopFn(ctx, engineID, grace)
}

// Remove calls RemoveFn.
func (r *Runtime) Remove(ctx context.Context, engineID string) error {
	if r.RemoveFn == nil {
		return notSet("Remove")
	}
	return r.RemoveFn(ctx, engineID)
}

// Inspect calls InspectFn.
func (r *Runtime) Inspect(ctx context.Context, engineID string) (sandbox.State, error) {
	if r.InspectFn == nil {
		return sandbox.State{}, notSet("Inspect")
	}
	return r.InspectFn(ctx, engineID)
}

// List calls ListFn.
func (r *Runtime) List(ctx context.Context, labels map[string]string) ([]sandbox.Instance, error) {
	if r.ListFn == nil {
		return nil, notSet("List")
	}
	return r.ListFn(ctx, labels)
}

// Exec calls ExecFn.
func (r *Runtime) Exec(ctx context.Context, engineID string, s sandbox.ExecSpec) (sandbox.Session, error) {
	if r.ExecFn == nil {
		return nil, notSet("Exec")
	}
	return r.ExecFn(ctx, engineID, s)
}

// ToolsVolume calls ToolsVolumeFn.
func (r *Runtime) ToolsVolume(ctx context.Context, image string) (string, error) {
	if r.ToolsVolumeFn == nil {
		return "", notSet("ToolsVolume")
	}
	return r.ToolsVolumeFn(ctx, image)
}

// Changes calls ChangesFn.
func (r *Runtime) Changes(ctx context.Context, engineID string) ([]sandbox.Change, error) {
	if r.ChangesFn == nil {
		return nil, notSet("Changes")
	}
	return r.ChangesFn(ctx, engineID)
}

// Run calls RunFn; without it the code is -1.
func (r *Runtime) Run(ctx context.Context, engineID string, s sandbox.ExecSpec, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if r.RunFn == nil {
		return -1, notSet("Run")
	}
	return r.RunFn(ctx, engineID, s, stdin, stdout, stderr)
}

// Session is a sandbox.Session made of function fields, like Runtime. A nil
// CloseFn makes Close a no-op returning nil (closing is always allowed);
// every other nil field returns an error wrapping ErrNotSet.
type Session struct {
	ReadFn   func(p []byte) (int, error)
	WriteFn  func(p []byte) (int, error)
	CloseFn  func() error
	ResizeFn func(ctx context.Context, cols, rows uint) error
	WaitFn   func(ctx context.Context) (int, error)
}

var _ sandbox.Session = (*Session)(nil)

// Read calls ReadFn.
func (s *Session) Read(p []byte) (int, error) {
	if s.ReadFn == nil {
		return 0, notSet("Session.Read")
	}
	return s.ReadFn(p)
}

// Write calls WriteFn.
func (s *Session) Write(p []byte) (int, error) {
	if s.WriteFn == nil {
		return 0, notSet("Session.Write")
	}
	return s.WriteFn(p)
}

// Close calls CloseFn, if set.
func (s *Session) Close() error {
	if s.CloseFn == nil {
		return nil
	}
	return s.CloseFn()
}

// Resize calls ResizeFn.
func (s *Session) Resize(ctx context.Context, cols, rows uint) error {
	if s.ResizeFn == nil {
		return notSet("Session.Resize")
	}
	return s.ResizeFn(ctx, cols, rows)
}

// Wait calls WaitFn; without it the code is -1.
func (s *Session) Wait(ctx context.Context) (int, error) {
	if s.WaitFn == nil {
		return -1, notSet("Session.Wait")
	}
	return s.WaitFn(ctx)
}
