package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"tuxlab/internal/client"
)

// The client's commands: argument parsing here, the work in internal/client.

func clientEnv(getenv func(string) string, std stdio) client.Env {
	return client.Env{In: std.in, Out: std.out, Err: std.err, Getenv: getenv}
}

func loginCmd(ctx context.Context, args []string, getenv func(string) string, std stdio) error {
	fs := flag.NewFlagSet("login", flag.ContinueOnError)
	fs.SetOutput(std.err)
	server := fs.String("server", "", "the tuxlab server's address (default: the last one logged in to, else "+client.DefaultServer+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return errors.New("usage: tuxlab login [--server URL] [USERNAME]; the password is read from the terminal or stdin, never a flag")
	}
	return client.Login(ctx, clientEnv(getenv, std), *server, fs.Arg(0))
}

func noArgs(name string, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments", name)
	}
	return nil
}

func logoutCmd(ctx context.Context, args []string, getenv func(string) string, std stdio) error {
	if err := noArgs("logout", args); err != nil {
		return err
	}
	return client.Logout(ctx, clientEnv(getenv, std))
}

func sandboxesCmd(ctx context.Context, args []string, getenv func(string) string, std stdio) error {
	if err := noArgs("sandboxes", args); err != nil {
		return err
	}
	return client.Sandboxes(ctx, clientEnv(getenv, std))
}

// parseID reads a positive id argument.
func parseID(what, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%s must be a number such as 12, not %q", what, s)
	}
	return id, nil
}

func shellCmd(ctx context.Context, args []string, getenv func(string) string, std stdio) error {
	var id int64
	switch len(args) {
	case 0:
	case 1:
		var err error
		if id, err = parseID("the sandbox id", args[0]); err != nil {
			return err
		}
	default:
		return errors.New("usage: tuxlab shell [ID]")
	}
	return client.Shell(ctx, clientEnv(getenv, std), id)
}

func cpCmd(ctx context.Context, args []string, getenv func(string) string, std stdio) error {
	if len(args) != 2 {
		return errors.New("usage: tuxlab cp SRC DST, one of them ID:PATH in a sandbox (tuxlab cp notes.txt 12:/tmp/)")
	}
	return client.Copy(ctx, clientEnv(getenv, std), args[0], args[1])
}

func labCmd(ctx context.Context, args []string, getenv func(string) string, std stdio) error {
	if len(args) != 2 || (args[0] != "check" && args[0] != "start") {
		return errors.New("usage: tuxlab lab start ID | tuxlab lab check ID (ID: the laboratory's)")
	}
	id, err := parseID("the laboratory id", args[1])
	if err != nil {
		return err
	}
	if args[0] == "start" {
		return client.LabStart(ctx, clientEnv(getenv, std), id)
	}
	return client.LabCheck(ctx, clientEnv(getenv, std), id)
}

func portForwardCmd(ctx context.Context, args []string, getenv func(string) string, std stdio) error {
	if len(args) != 2 {
		return errors.New("usage: tuxlab port-forward ID LOCAL:REMOTE (tuxlab port-forward 12 8080:80; LOCAL 0 for any free port)")
	}
	id, err := parseID("the sandbox id", args[0])
	if err != nil {
		return err
	}
	local, remote, err := client.ParsePorts(args[1])
	if err != nil {
		return err
	}
	return client.PortForward(ctx, clientEnv(getenv, std), id, local, remote)
}
