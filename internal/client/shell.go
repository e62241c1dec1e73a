package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"golang.org/x/term"
)

// maxCloseWait bounds how long ending a terminal waits for the server.
const maxCloseWait = 5 * time.Second

// Shell connects the user's terminal to a shell in sandbox id (0: the only
// running one) until the shell exits or the server ends the terminal. On a
// terminal, stdin is put in raw mode (restored on every way out) and size
// changes (SIGWINCH) are sent on; otherwise stdin is typed in as it comes
// and its end is a Ctrl-D. The shell's exit code becomes the ExitError.
func Shell(ctx context.Context, env Env, id int64) error {
	c, _, err := loggedIn(env)
	if err != nil {
		return err
	}
	if id, err = c.runningSandbox(ctx, id); err != nil {
		return err
	}
	fd, tty := -1, false
	if f, ok := env.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fd, tty = int(f.Fd()), true
	}
	cols, rows := 0, 0
	if tty {
		cols, rows, _ = term.GetSize(fd)
	}
	// Raw before the terminal opens, so keys typed meanwhile are not echoed
	// by the local terminal as well as by the sandbox's.
	if tty {
		old, err := term.MakeRaw(fd)
		if err != nil {
			return fmt.Errorf("put the terminal in raw mode: %w", err)
		}
		defer term.Restore(fd, old)
	}
	var outMu sync.Mutex
	t, err := c.dialTerminal(ctx, id, cols, rows, func(b []byte) {
		outMu.Lock()
		env.Out.Write(b)
		outMu.Unlock()
	}, func(s string) {
		outMu.Lock()
		fmt.Fprintf(env.Err, "\r\n[tuxlab: %s]\r\n", s)
		outMu.Unlock()
	})
	if err != nil {
		return err
	}
	code, reason, err := pump(ctx, env, t, fd, tty)
	if t.endStatus() == 401 {
		reason += " (your token expired or was revoked: run tuxlab login)"
	}
	if reason != "" {
		// The reason is printed on a line of its own, below the shell's prompt.
		fmt.Fprint(env.Err, "\r\n")
	}
	if errors.Is(err, context.Canceled) {
		// SIGINT or SIGTERM to the client (on a raw terminal Ctrl-C goes to the shell).
		return &ExitError{Code: 130, Msg: "interrupted: the shell was hung up"}
	}
	if err != nil {
		return err
	}
	if reason != "" {
		reason = t.closedWhy(id, reason)
	}
	return shellEnd(code, reason)
}

// pump copies stdin to the terminal and sends resizes until the terminal
// ends or ctx is done (the terminal is then hung up).
func pump(ctx context.Context, env Env, t *terminal, fd int, tty bool) (*int, string, error) {
	winch := make(chan os.Signal, 1)
	if tty && len(resizeSignals) > 0 {
		signal.Notify(winch, resizeSignals...)
		defer signal.Stop(winch)
	}
	input := make(chan []byte)
	inputDone := make(chan error, 1)
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := env.In.Read(buf)
			if n > 0 {
				b := append([]byte(nil), buf[:n]...)
				select {
				case input <- b:
				case <-t.done:
					return
				}
			}
			if err != nil {
				inputDone <- err
				return
			}
		}
	}()
	for {
		select {
		case <-t.done:
			code, reason := t.ended()
			return code, reason, nil
		case <-ctx.Done():
			t.hangup()
			return nil, "", ctx.Err()
		case b := <-input:
			if err := t.write(ctx, b); err != nil {
				<-t.done
				code, reason := t.ended()
				return code, reason, nil
			}
		case err := <-inputDone:
			if err != io.EOF {
				t.hangup()
				return nil, "", fmt.Errorf("read the terminal: %w", err)
			}
			// Stdin ended (a pipe): the shell gets end of input, as a Ctrl-D.
			t.write(ctx, []byte{4})
		case <-winch:
			if cols, rows, err := term.GetSize(fd); err == nil {
				t.resize(ctx, cols, rows)
			}
		}
	}
}

// shellEnd is the error a finished shell session returns: nil for an exit
// code of 0, the code otherwise, and reason (said) when the server ended
// the terminal itself.
func shellEnd(code *int, reason string) error {
	switch {
	case reason != "":
		c := 1
		if code != nil && *code != 0 {
			c = *code
		}
		return &ExitError{Code: c, Msg: reason}
	case code == nil || *code == 0:
		return nil
	}
	return &ExitError{Code: *code}
}
