package kube_test

import (
	"os"
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/kube"
	"tuxlab/internal/sandbox/sandboxtest"
)

// requireCluster returns a driver on the cluster of KUBECONFIG (or
// scripts/kube-up.sh's) and that kubeconfig's path, or stops the test as
// apitest.Kubeconfig does: a failure under TUXLAB_TEST_KUBE=1, else a skip.
func requireCluster(t *testing.T) (*kube.Runtime, string) {
	t.Helper()
	path := apitest.Kubeconfig(t)
	if path == "" {
		return nil, ""
	}
	rt, err := kube.New(kube.Options{Kubeconfig: path, Namespace: os.Getenv("TUXLAB_KUBE_NAMESPACE")})
	if err != nil {
		t.Fatalf("kubernetes: %v", err)
	}
	return rt, path
}

// TestContract runs the sandbox.Runtime contract against the Kubernetes
// driver on a real cluster (scripts/kube-up.sh's in CI). Where Kubernetes
// differs: a stopped sandbox has no pod, so it keeps nothing it wrote
// (StopDiscards; with a storage class it keeps its kept directories only:
// TestKeptState).
func TestContract(t *testing.T) {
	t.Parallel()
	sandboxtest.RunContract(t, func(t *testing.T) sandbox.Runtime {
		if rt, _ := requireCluster(t); rt != nil {
			return rt
		}
		return nil
	}, sandboxtest.ContractOptions{
		Image: "tuxlab/sandbox-busybox:latest", ToolsImage: sandbox.DefaultToolsImage,
		StopDiscards: true,
	})
}
