//go:build linux

// Command tuxlab-tty is the first process of a sandbox terminal: it runs a
// shell on a terminal of its own and hangs that terminal up, as a real one,
// when tuxlab closes the session (see package ttyrelay).
//
//	tuxlab-tty COLS ROWS SHELL [ARG...]
//
// It is built statically and reaches sandboxes on the read-only tools
// mount, so root in the sandbox cannot replace it.
package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"tuxlab/internal/ttyrelay"
)

func main() {
	// Every thread counts against the sandbox's pid limit: one runs Go code
	// (tuxlab also starts the relay with GOMAXPROCS=1, so the runtime makes
	// no more to begin with), and the terminal is read and written through
	// the runtime's poller, not by threads blocked in read(2).
	runtime.GOMAXPROCS(1)
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: tuxlab-tty COLS ROWS SHELL [ARG...]")
		os.Exit(ttyrelay.ExitFailed)
	}
	cols, err1 := strconv.ParseUint(os.Args[1], 10, 16)
	rows, err2 := strconv.ParseUint(os.Args[2], 10, 16)
	if err1 != nil || err2 != nil || cols == 0 || rows == 0 {
		fmt.Fprintln(os.Stderr, "tuxlab-tty: COLS and ROWS must be numbers from 1 to 65535")
		os.Exit(ttyrelay.ExitFailed)
	}
	token := os.Getenv(ttyrelay.HangupEnv)
	// The shell gets the environment without tuxlab's own variables: the
	// relay carries the mark, the learner's processes do not.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, ttyrelay.HangupEnv+"=") || strings.HasPrefix(kv, ttyrelay.MarkEnv+"=") ||
			strings.HasPrefix(kv, "GOMAXPROCS=")
	})
	in, out := pollable(0, "stdin"), pollable(1, "stdout")
	os.Exit(ttyrelay.Run(ttyrelay.Config{Cols: uint16(cols), Rows: uint16(rows), Argv: os.Args[3:], Env: env,
		Token: token, Log: os.Stderr}, in, out))
}

// pollable returns fd as a File the runtime polls, in non-blocking mode, or
// os.Stdin or os.Stdout as they are if that fails.
func pollable(fd int, name string) *os.File {
	if err := unix.SetNonblock(fd, true); err != nil {
		return map[int]*os.File{0: os.Stdin, 1: os.Stdout}[fd]
	}
	return os.NewFile(uintptr(fd), name)
}
