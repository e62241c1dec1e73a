package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"time"
)

// LeaseSandboxes is the lease of the sandbox reconciliation and lifecycle
// sweep (idle stop, end of lifetime): with several replicas on one
// database, only its holder runs them (docs/operations.md, "Several
// replicas").
const LeaseSandboxes = "sandbox-lifecycle"

// newHolder names this process in the leases table: the host name (a pod's
// name on Kubernetes) and a random suffix, so two processes on one host and
// a restarted one differ.
func newHolder() string {
	host, _ := os.Hostname()
	b := make([]byte, 6)
	rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}

// Holder is this process's name in the leases table.
func (a *App) Holder() string { return a.holder }

// leaseTTL is how long a lease taken at one round of the background work
// lasts: three rounds, so a holder that misses one round keeps it, and one
// killed gives it up three rounds later at most.
func (a *App) leaseTTL() time.Duration {
	return 3 * a.Config.SandboxReconcileInterval
}

// leadSandboxes takes or renews the sandbox lease and says whether this
// process holds it, logging when that changes. A database error counts as
// not holding it: the work waits for a round that can be sure.
func (a *App) leadSandboxes(ctx context.Context) bool {
	ok, err := a.DB.Leases().AcquireLease(ctx, LeaseSandboxes, a.holder, a.DB.Now().UTC(), a.leaseTTL())
	if err != nil {
		if ctx.Err() == nil {
			a.Log.Warn("sandbox lease: cannot read it; reconciliation and sweep skip this round", "error", err.Error())
		}
		ok = false
	}
	if was := a.leading.Swap(ok); was != ok {
		if ok {
			a.Log.Info("this process now reconciles sandboxes and stops idle ones for the install", "lease", LeaseSandboxes, "holder", a.holder)
		} else {
			a.Log.Info("another process reconciles sandboxes for the install", "lease", LeaseSandboxes)
		}
	}
	return ok
}

// releaseLease gives lease name back at a clean stop, so another replica
// takes it at its next round rather than once it expires.
func (a *App) releaseLease(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := a.DB.Leases().ReleaseLease(ctx, name, a.holder); err != nil {
		a.Log.Warn("could not release a lease: another process takes it once it expires", "lease", name, "error", err.Error())
	}
	a.leading.Store(false)
}
