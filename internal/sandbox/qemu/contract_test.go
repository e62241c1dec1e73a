package qemu_test

import (
	"testing"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/qemu"
	"tuxlab/internal/sandbox/sandboxtest"
)

// TestContract runs the sandbox.Runtime contract against the QEMU driver,
// where it applies to machines: the tools disk stands for the tools volume;
// no changed-file listing and no shared networks yet (each must answer
// sandbox.ErrUnsupported). A
// machine boots twice in it (after Start, and after Stop and Start).
func TestContract(t *testing.T) {
	t.Parallel()
	sandboxtest.RunContract(t, func(t *testing.T) sandbox.Runtime {
		rt, _ := newRuntime(t)
		return rt
	}, sandboxtest.ContractOptions{
		Image: qemu.DefaultImage, ToolsImage: sandbox.DefaultToolsImage, NoChanges: true,
		MemoryBytes: 512 << 20, DiskMB: 1024, Timeout: bootTimeout,
	})
}
