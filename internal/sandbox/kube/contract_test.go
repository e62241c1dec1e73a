package kube_test

import (
	"context"
	"os"
	"testing"
	"time"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/kube"
	"tuxlab/internal/sandbox/sandboxtest"
)

// defaultKubeconfig is where scripts/kube-up.sh leaves the admin kubeconfig.
const defaultKubeconfig = "/var/lib/tuxlab/kube/admin.kubeconfig"

// requireCluster returns a driver on the cluster of KUBECONFIG (or
// scripts/kube-up.sh's), in TUXLAB_KUBE_NAMESPACE (or kube-up's default). It
// skips the test when no cluster answers, and fails it instead when
// TUXLAB_TEST_KUBE=1 (CI).
func requireCluster(t *testing.T) *kube.Runtime {
	t.Helper()
	stop := t.Skipf
	if os.Getenv("TUXLAB_TEST_KUBE") == "1" {
		stop = t.Fatalf
	}
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		path = defaultKubeconfig
	}
	if _, err := os.Stat(path); err != nil {
		stop("no kubeconfig (run ./scripts/kube-up.sh; TUXLAB_TEST_KUBE=1 makes this fatal): %v", err)
		return nil
	}
	rt, err := kube.New(kube.Options{Kubeconfig: path, Namespace: os.Getenv("TUXLAB_KUBE_NAMESPACE")})
	if err != nil {
		stop("kubernetes: %v", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Ping(ctx); err != nil {
		stop("no cluster answers at %s (run ./scripts/kube-up.sh; TUXLAB_TEST_KUBE=1 makes this fatal): %v", path, err)
		return nil
	}
	return rt
}

// TestContract runs the sandbox.Runtime contract against the Kubernetes
// driver on a real cluster (scripts/kube-up.sh's in CI). Where Kubernetes
// differs: a stopped sandbox has no pod, so it keeps nothing it wrote
// (StopDiscards; with a storage class it keeps its kept directories only:
// TestKeptState).
func TestContract(t *testing.T) {
	t.Parallel()
	sandboxtest.RunContract(t, func(t *testing.T) sandbox.Runtime {
		if rt := requireCluster(t); rt != nil {
			return rt
		}
		return nil
	}, sandboxtest.ContractOptions{
		Image: "tuxlab/sandbox-busybox:latest", ToolsImage: sandbox.DefaultToolsImage,
		StopDiscards: true,
	})
}
