// Command tuxlab is the tuxlab server and its administration tool.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"tuxlab/internal/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	var exit *client.ExitError
	switch {
	case errors.As(err, &exit):
		// The client's commands end with a code of their own (a shell's,
		// a failing lab check's), saying why when there is something to say.
		if exit.Msg != "" {
			fmt.Fprintln(os.Stderr, "tuxlab:", exit.Msg)
		}
		os.Exit(exit.Code)
	case err != nil:
		fmt.Fprintln(os.Stderr, "tuxlab:", err)
		os.Exit(1)
	}
}

// stdio is a command's standard streams.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}
