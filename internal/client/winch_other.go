//go:build !unix

package client

import "os"

// resizeSignals is empty where no signal tells of a resize: the terminal
// keeps the size it had when the shell opened.
var resizeSignals []os.Signal
