package qemu

import (
	"context"
	"fmt"
	"io"
	"strings"

	"tuxlab/internal/sandbox"
)

// WaitReady waits until machine id's guest answers on its host channel: it
// has booted far enough to run commands (a warm start answers at once). It
// returns ErrGone if the machine does not exist, and an error saying where
// the boot stands (the console's tail) if QEMU is not running.
func (r *Runtime) WaitReady(ctx context.Context, id string) error {
	if _, err := r.load(id); err != nil {
		return err
	}
	if r.pid(id) == 0 {
		return fmt.Errorf("machine %s is not running: %s", id, r.bootLogTail(id, 500))
	}
	if _, err := r.client(ctx, id); err != nil {
		return err
	}
	return r.syncHosts(ctx, id)
}

// syncHosts writes the members of machine id's segment into its /etc/hosts
// when they changed since it was last written there: a member that joined
// while id was booting (announce could not reach it) is known by the time
// anything runs in id.
func (r *Runtime) syncHosts(ctx context.Context, id string) error {
	rec, err := r.load(id)
	if err != nil || !isSegment(rec.Network) {
		return err
	}
	n, err := r.loadNetwork(rec.Network)
	if err != nil {
		return nil // the segment went: nothing to resolve
	}
	word := hostsWord(n)
	if last, ok := r.hostsWritten.Load(id); ok && last.(string) == word {
		return nil
	}
	var errOut strings.Builder
	code, err := r.Run(ctx, id, sandbox.ExecSpec{Cmd: []string{"/bin/sh", "-c", hostsScript, "hosts", word}, User: "root"}, nil, io.Discard, &errOut)
	if err != nil {
		return err
	}
	if code != 0 {
		r.log.Warn("machine network: /etc/hosts not updated", "machine", id, "network", rec.Network, "code", code, "stderr", errOut.String())
		return nil
	}
	r.hostsWritten.Store(id, word)
	return nil
}
