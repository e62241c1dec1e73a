package qemu

import (
	"context"
	"fmt"
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
	_, err := r.client(ctx, id)
	return err
}
