//go:build unix

package client

import (
	"os"
	"syscall"
)

// resizeSignals are the signals that say the terminal's window changed size.
var resizeSignals = []os.Signal{syscall.SIGWINCH}
