package sandbox

import "time"

// Observer hears what the service measures, for the operator's metrics
// (internal/metrics implements it); the service knows no metrics library.
// Its methods must return at once.
type Observer interface {
	// SandboxCreated: Create answered a running sandbox after d (a warm
	// one from the pool, or one made and started for the learner).
	SandboxCreated(d time.Duration)
	// SandboxStarted: Start started a stopped sandbox after d.
	SandboxStarted(d time.Duration)
	// PoolTaken: Create for a template with a warm pool found a warm
	// sandbox (hit) or had to make one (miss).
	PoolTaken(hit bool)
}

// noObserver hears nothing: the default.
type noObserver struct{}

func (noObserver) SandboxCreated(time.Duration) {}
func (noObserver) SandboxStarted(time.Duration) {}
func (noObserver) PoolTaken(bool)               {}
