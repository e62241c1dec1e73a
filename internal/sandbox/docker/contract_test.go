package docker_test

import (
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/sandboxtest"
)

// TestContract runs the sandbox.Runtime contract against the Docker driver
// on the local engine.
func TestContract(t *testing.T) {
	t.Parallel()
	sandboxtest.RunContract(t, func(t *testing.T) sandbox.Runtime {
		rt := apitest.RequireEngine(t)
		if rt == nil {
			return nil
		}
		return rt
	}, sandboxtest.ContractOptions{Image: apitest.TestImage, ToolsImage: sandbox.DefaultToolsImage})
}
