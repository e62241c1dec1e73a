package sandboxtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"tuxlab/internal/sandbox"
)

// Engine is a Runtime that works, in memory, for the calls a sandbox's life
// needs: images and the tools volume are there, the disk quota applies,
// Create, Start, Stop, Remove and Inspect keep containers in a map (a
// missing one is sandbox.ErrGone), List finds nothing and Changes finds no
// change. Exec, Run and the rest are unset. A test replaces a field to make
// one call fail.
type Engine struct {
	Runtime
	mu         sync.Mutex
	n          int
	containers map[string]*sandbox.State
	removed    []string
}

// NewEngine returns an Engine without containers.
func NewEngine() *Engine {
	e := &Engine{containers: map[string]*sandbox.State{}}
	e.Runtime = Runtime{
		ImageExistsFn:    func(context.Context, string) (bool, error) { return true, nil },
		ToolsVolumeFn:    func(context.Context, string) (string, error) { return "tools", nil },
		ProbeDiskQuotaFn: func(context.Context, string) error { return nil },
		ListFn:           func(context.Context, map[string]string) ([]sandbox.Instance, error) { return nil, nil },
		ChangesFn:        func(context.Context, string) ([]sandbox.Change, error) { return nil, nil },
		CreateFn:         e.create,
		StartFn:          func(_ context.Context, id string) error { return e.set(id, true) },
		StopFn:           func(_ context.Context, id string, _ time.Duration) error { return e.set(id, false) },
		InspectFn:        e.inspect,
		RemoveFn:         e.remove,
	}
	return e
}

func (e *Engine) create(context.Context, sandbox.Spec) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	id := fmt.Sprintf("fake-%d", e.n)
	e.containers[id] = &sandbox.State{Status: "created", Created: time.Now().UTC()}
	return id, nil
}

func (e *Engine) set(id string, running bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	st, ok := e.containers[id]
	if !ok {
		return fmt.Errorf("%w: %s", sandbox.ErrGone, id)
	}
	st.Running, st.Status = running, "exited"
	if running {
		st.Status = "running"
	}
	return nil
}

func (e *Engine) inspect(_ context.Context, id string) (sandbox.State, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st, ok := e.containers[id]
	if !ok {
		return sandbox.State{}, fmt.Errorf("%w: %s", sandbox.ErrGone, id)
	}
	return *st, nil
}

func (e *Engine) remove(_ context.Context, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.removed = append(e.removed, id)
	if _, ok := e.containers[id]; !ok {
		return fmt.Errorf("%w: %s", sandbox.ErrGone, id)
	}
	delete(e.containers, id)
	return nil
}

// Removed returns the ids Remove was called with, in order.
func (e *Engine) Removed() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.removed...)
}
