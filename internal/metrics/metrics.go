// Package metrics holds the Prometheus collectors of tuxlab's domains:
// sandbox creation and start latency, warm pool hits and misses, check
// durations and timeouts, and engine errors. The domains do not import it:
// the sandbox service tells a sandbox.Observer, and internal/app wraps the
// engine runtime and the checks' sandbox service with the types here. The
// collectors are registered on the HTTP server's registry, so /metrics
// shows them beside the HTTP metrics (docs/operations.md lists them all).
package metrics

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tuxlab/internal/sandbox"
)

// Metrics are the domain collectors of one process.
type Metrics struct {
	create, start prometheus.Histogram
	pool          *prometheus.CounterVec
	check         *prometheus.HistogramVec
	timeouts      *prometheus.CounterVec
	engineErrors  *prometheus.CounterVec
}

// latencyBuckets span a warm pool's milliseconds to a slow engine's half minute.
var latencyBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// New makes the collectors; Register puts them on a registry.
func New() *Metrics {
	m := &Metrics{
		create: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tuxlab_sandbox_create_seconds", Buckets: latencyBuckets,
			Help: "Time a learner waits for a new running sandbox (a warm one from the pool, or one made and started).",
		}),
		start: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tuxlab_sandbox_start_seconds", Buckets: latencyBuckets,
			Help: "Time the engine takes to start a stopped sandbox again.",
		}),
		pool: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tuxlab_sandbox_pool_total",
			Help: "Sandbox creations for templates with a warm pool, by whether a warm sandbox was there (hit) or not (miss).",
		}, []string{"result"}),
		check: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tuxlab_check_seconds", Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
			Help: "Duration of one check script (a laboratory task's or an exam question's) in a learner's sandbox, by kind.",
		}, []string{"kind"}),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tuxlab_check_timeouts_total",
			Help: "Check scripts killed at their timeout, or not run because their check's time budget was spent, by kind.",
		}, []string{"kind"}),
		engineErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tuxlab_engine_errors_total",
			Help: "Container engine calls that failed, by operation (a missing container, and the quota probe's refusal, are not errors).",
		}, []string{"op"}),
	}
	// Every series exists from the start, at zero, so rates and alerts
	// need no special case for "never happened".
	for _, r := range []string{"hit", "miss"} {
		m.pool.WithLabelValues(r)
	}
	for _, k := range []string{KindLab, KindExam} {
		m.check.WithLabelValues(k)
		m.timeouts.WithLabelValues(k)
	}
	for _, op := range engineOps {
		m.engineErrors.WithLabelValues(op)
	}
	return m
}

// Register registers the collectors on reg (the HTTP server's registry).
func (m *Metrics) Register(reg prometheus.Registerer) {
	reg.MustRegister(m.create, m.start, m.pool, m.check, m.timeouts, m.engineErrors)
}

// SandboxCreated implements sandbox.Observer.
func (m *Metrics) SandboxCreated(d time.Duration) { m.create.Observe(d.Seconds()) }

// SandboxStarted implements sandbox.Observer.
func (m *Metrics) SandboxStarted(d time.Duration) { m.start.Observe(d.Seconds()) }

// PoolTaken implements sandbox.Observer.
func (m *Metrics) PoolTaken(hit bool) {
	r := "miss"
	if hit {
		r = "hit"
	}
	m.pool.WithLabelValues(r).Inc()
}

var _ sandbox.Observer = (*Metrics)(nil)

// The kinds of check.
const (
	KindLab  = "lab"
	KindExam = "exam"
)

// Checker is what laboratories and exams run their checks through
// (sandbox.Service); Checks observes them.
type Checker interface {
	CheckIn(ctx context.Context, c *sandbox.Container, checks ...sandbox.Script) ([]*sandbox.Result, error)
	CheckInBudget(ctx context.Context, c *sandbox.Container, b sandbox.Budget, checks ...sandbox.Script) ([]*sandbox.Result, error)
}

// Checks is the sandbox service with its checks observed as kind: each
// script that ran counts its duration, and a timeout (or a script its
// budget left no time for) counts as one. Checks refused because the
// sandbox was tampered with did not run, and count nothing.
type Checks struct {
	*sandbox.Service
	m    *Metrics
	kind string
}

// Checks returns svc with its checks observed as kind (KindLab, KindExam).
func (m *Metrics) Checks(svc *sandbox.Service, kind string) *Checks {
	return &Checks{Service: svc, m: m, kind: kind}
}

// CheckIn is sandbox.Service.CheckIn, observed.
func (c *Checks) CheckIn(ctx context.Context, box *sandbox.Container, checks ...sandbox.Script) ([]*sandbox.Result, error) {
	res, err := c.Service.CheckIn(ctx, box, checks...)
	c.observe(res)
	return res, err
}

// CheckInBudget is sandbox.Service.CheckInBudget, observed.
func (c *Checks) CheckInBudget(ctx context.Context, box *sandbox.Container, b sandbox.Budget, checks ...sandbox.Script) ([]*sandbox.Result, error) {
	res, err := c.Service.CheckInBudget(ctx, box, b, checks...)
	c.observe(res)
	return res, err
}

func (c *Checks) observe(results []*sandbox.Result) {
	for _, r := range results {
		if r == nil || r.Tampered != nil {
			continue
		}
		if !r.Skipped {
			c.m.check.WithLabelValues(c.kind).Observe(r.Duration.Seconds())
		}
		if r.TimedOut {
			c.m.timeouts.WithLabelValues(c.kind).Inc()
		}
	}
}

// engineOps are the operations of sandbox.Runtime, as the op label names them.
var engineOps = []string{"ping", "image_exists", "ensure_network", "remove_network", "probe_disk_quota", "disk_usage",
	"create", "start", "stop", "remove", "inspect", "list", "exec", "tools_volume", "changes", "run"}

// Runtime is a sandbox.Runtime whose failed calls count in
// tuxlab_engine_errors_total.
type Runtime struct {
	rt sandbox.Runtime
	m  *Metrics
}

var _ sandbox.Runtime = (*Runtime)(nil)

// Runtime returns rt with its errors counted.
func (m *Metrics) Runtime(rt sandbox.Runtime) *Runtime { return &Runtime{rt: rt, m: m} }

// count counts err as a failure of op, unless it is an answer rather than
// a failure (the container is gone, the storage has no quotas) or the
// caller's context ended first (it went away, or a script's timeout came).
func (r *Runtime) count(ctx context.Context, op string, err error) {
	if err == nil || errors.Is(err, sandbox.ErrGone) || errors.Is(err, sandbox.ErrNoDiskQuota) || ctx.Err() != nil {
		return
	}
	r.m.engineErrors.WithLabelValues(op).Inc()
}

// Ping implements sandbox.Runtime.
func (r *Runtime) Ping(ctx context.Context) error {
	err := r.rt.Ping(ctx)
	r.count(ctx, "ping", err)
	return err
}

// ImageExists implements sandbox.Runtime.
func (r *Runtime) ImageExists(ctx context.Context, image string) (bool, error) {
	ok, err := r.rt.ImageExists(ctx, image)
	r.count(ctx, "image_exists", err)
	return ok, err
}

// EnsureNetwork implements sandbox.Runtime.
func (r *Runtime) EnsureNetwork(ctx context.Context, name string, labels map[string]string) error {
	err := r.rt.EnsureNetwork(ctx, name, labels)
	r.count(ctx, "ensure_network", err)
	return err
}

// RemoveNetwork implements sandbox.Runtime.
func (r *Runtime) RemoveNetwork(ctx context.Context, name string) error {
	err := r.rt.RemoveNetwork(ctx, name)
	r.count(ctx, "remove_network", err)
	return err
}

// WaitReady implements sandbox.Runtime.
func (r *Runtime) WaitReady(ctx context.Context, engineID string) error {
	err := r.rt.WaitReady(ctx, engineID)
	r.count(ctx, "wait_ready", err)
	return err
}

// ProbeDiskQuota implements sandbox.Runtime.
func (r *Runtime) ProbeDiskQuota(ctx context.Context, image string) error {
	err := r.rt.ProbeDiskQuota(ctx, image)
	r.count(ctx, "probe_disk_quota", err)
	return err
}

// DiskUsage implements sandbox.Runtime.
func (r *Runtime) DiskUsage(ctx context.Context, engineIDs []string) (map[string]int64, error) {
	u, err := r.rt.DiskUsage(ctx, engineIDs)
	r.count(ctx, "disk_usage", err)
	return u, err
}

// Create implements sandbox.Runtime.
func (r *Runtime) Create(ctx context.Context, s sandbox.Spec) (string, error) {
	id, err := r.rt.Create(ctx, s)
	r.count(ctx, "create", err)
	return id, err
}

// Start implements sandbox.Runtime.
func (r *Runtime) Start(ctx context.Context, engineID string) error {
	err := r.rt.Start(ctx, engineID)
	r.count(ctx, "start", err)
	return err
}

// Stop implements sandbox.Runtime.
func (r *Runtime) Stop(ctx context.Context, engineID string, grace time.Duration) error {
	err := r.rt.Stop(ctx, engineID, grace)
	r.count(ctx, "stop", err)
	return err
}

// Remove implements sandbox.Runtime.
func (r *Runtime) Remove(ctx context.Context, engineID string) error {
	err := r.rt.Remove(ctx, engineID)
	r.count(ctx, "remove", err)
	return err
}

// Inspect implements sandbox.Runtime.
func (r *Runtime) Inspect(ctx context.Context, engineID string) (sandbox.State, error) {
	st, err := r.rt.Inspect(ctx, engineID)
	r.count(ctx, "inspect", err)
	return st, err
}

// List implements sandbox.Runtime.
func (r *Runtime) List(ctx context.Context, labels map[string]string) ([]sandbox.Instance, error) {
	l, err := r.rt.List(ctx, labels)
	r.count(ctx, "list", err)
	return l, err
}

// Exec implements sandbox.Runtime.
func (r *Runtime) Exec(ctx context.Context, engineID string, s sandbox.ExecSpec) (sandbox.Session, error) {
	sess, err := r.rt.Exec(ctx, engineID, s)
	r.count(ctx, "exec", err)
	return sess, err
}

// ToolsVolume implements sandbox.Runtime.
func (r *Runtime) ToolsVolume(ctx context.Context, image string) (string, error) {
	v, err := r.rt.ToolsVolume(ctx, image)
	r.count(ctx, "tools_volume", err)
	return v, err
}

// Changes implements sandbox.Runtime.
func (r *Runtime) Changes(ctx context.Context, engineID string) ([]sandbox.Change, error) {
	c, err := r.rt.Changes(ctx, engineID)
	r.count(ctx, "changes", err)
	return c, err
}

// Run implements sandbox.Runtime.
func (r *Runtime) Run(ctx context.Context, engineID string, s sandbox.ExecSpec, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	code, err := r.rt.Run(ctx, engineID, s, stdin, stdout, stderr)
	r.count(ctx, "run", err)
	return code, err
}
