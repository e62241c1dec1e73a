package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tuxlab/internal/metrics"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/sandboxtest"
)

// value returns the value of the counter or histogram count name{label="v"}.
func value(t *testing.T, reg *prometheus.Registry, name, label, v string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == v {
					if m.Histogram != nil {
						return float64(m.GetHistogram().GetSampleCount())
					}
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series %s{%s=%q}", name, label, v)
	return 0
}

// TestEngineErrorsCountFailuresOnly: an engine call that fails counts under
// its operation; a missing container, the quota probe's refusal and a call
// whose context ended (a script's timeout) do not.
func TestEngineErrorsCountFailuresOnly(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New()
	m.Register(reg)
	down := fmt.Errorf("%w: connection refused", sandbox.ErrRuntimeUnavailable)
	fake := &sandboxtest.Runtime{
		CreateFn:         func(context.Context, sandbox.Spec) (string, error) { return "", down },
		StartFn:          func(context.Context, string) error { return fmt.Errorf("%w: no such container", sandbox.ErrGone) },
		ProbeDiskQuotaFn: func(context.Context, string) error { return sandbox.ErrNoDiskQuota },
		RunFn: func(ctx context.Context, _ string, _ sandbox.ExecSpec, _ io.Reader, _, _ io.Writer) (int, error) {
			<-ctx.Done()
			return -1, ctx.Err()
		},
	}
	rt := m.Runtime(fake)
	ctx := context.Background()
	if _, err := rt.Create(ctx, sandbox.Spec{}); !errors.Is(err, down) {
		t.Fatalf("create: %v", err)
	}
	rt.Start(ctx, "gone")
	rt.ProbeDiskQuota(ctx, "img")
	tctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	rt.Run(tctx, "id", sandbox.ExecSpec{}, nil, nil, nil)
	for op, want := range map[string]float64{"create": 1, "start": 0, "probe_disk_quota": 0, "run": 0, "remove": 0} {
		if got := value(t, reg, "tuxlab_engine_errors_total", "op", op); got != want {
			t.Errorf("engine errors of %s: %v, want %v", op, got, want)
		}
	}
}

// TestObserverCounts: the sandbox service's observations land in their series.
func TestObserverCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New()
	m.Register(reg)
	m.PoolTaken(true)
	m.PoolTaken(false)
	m.PoolTaken(false)
	if hit, miss := value(t, reg, "tuxlab_sandbox_pool_total", "result", "hit"), value(t, reg, "tuxlab_sandbox_pool_total", "result", "miss"); hit != 1 || miss != 2 {
		t.Fatalf("pool hit %v miss %v", hit, miss)
	}
}
