package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"tuxlab/internal/app"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/errs"
	"tuxlab/internal/logging"
)

const usage = `tuxlab: learn Linux system administration by doing.

Usage:
  tuxlab serve [--addr HOST:PORT]       run the HTTP server (applies migrations first)
  tuxlab migrate                        apply database migrations and exit
  tuxlab user create --username U --email E --role admin|instructor|student
                                        create a user; the password is read from
                                        stdin, or prompted for on a terminal
  tuxlab content import DIR             upsert a curriculum directory by slug (idempotent)
  tuxlab content export DIR             write the curriculum in the database to DIR
  tuxlab version                        print the version

Client of any tuxlab server, over its API (docs/cli.md):
  tuxlab login [--server URL] [USERNAME] log in; the token is kept in
                                        ~/.config/tuxlab/credentials.json (0600)
  tuxlab logout                         revoke the token and forget it
  tuxlab sandboxes                      list your sandboxes
  tuxlab shell [ID]                     a terminal in a sandbox (default: your
                                        only running one)
  tuxlab cp SRC DST                     copy a file to or from a sandbox; the
                                        sandbox side is ID:PATH
  tuxlab lab start ID                   start a laboratory
  tuxlab lab check ID                   check its tasks (exit code 1 if one fails)
  tuxlab port-forward ID LOCAL:REMOTE   forward 127.0.0.1:LOCAL to port REMOTE
                                        of a sandbox, until Ctrl-C

Configuration comes from environment variables; see README.md.
`

// run is the whole program, with its environment passed in so tests can run it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	std := stdio{in: stdin, out: stdout, err: stderr}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "version", "--version":
		fmt.Fprintln(stdout, "tuxlab", app.Version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case "serve":
		return serve(ctx, args[1:], getenv, std)
	case "migrate":
		return migrate(ctx, args[1:], getenv, std)
	case "user":
		return user(ctx, args[1:], getenv, std)
	case "content":
		return contentCmd(ctx, args[1:], getenv, std)
	case "login":
		return loginCmd(ctx, args[1:], getenv, std)
	case "logout":
		return logoutCmd(ctx, args[1:], getenv, std)
	case "sandboxes":
		return sandboxesCmd(ctx, args[1:], getenv, std)
	case "shell":
		return shellCmd(ctx, args[1:], getenv, std)
	case "cp":
		return cpCmd(ctx, args[1:], getenv, std)
	case "lab":
		return labCmd(ctx, args[1:], getenv, std)
	case "port-forward":
		return portForwardCmd(ctx, args[1:], getenv, std)
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

// setup loads the configuration, opens the migrated store and wires the App
// on it: nothing is seeded, the engine is not asked, no background work runs
// (serve calls App.Start and App.Serve for that).
func setup(ctx context.Context, getenv func(string) string, std stdio) (config.Config, *slog.Logger, *app.App, error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return cfg, nil, nil, fmt.Errorf("configuration:\n%w", err)
	}
	log := logging.New(std.err, cfg.LogLevel)
	if err := cfg.EnsureSecret(); err != nil {
		return cfg, log, nil, err
	}
	db, err := app.Open(ctx, cfg, log)
	if err != nil {
		return cfg, log, nil, err
	}
	a, err := app.New(ctx, cfg, log, db)
	if err != nil {
		db.Close()
		return cfg, log, nil, err
	}
	return cfg, log, a, nil
}

func serve(ctx context.Context, args []string, getenv func(string) string, std stdio) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(std.err)
	addr := fs.String("addr", "", "listen address (overrides TUXLAB_ADDR)")
	grace := fs.Duration("shutdown-grace", 20*time.Second, "how long in-flight requests may take after SIGTERM")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// The server logs every request: its lines are written in batches, and
	// whatever is left when serve returns is written before.
	logs := logging.NewWriter(std.err)
	defer logs.Flush()
	cfg, log, a, err := setup(ctx, getenv, stdio{in: std.in, out: std.out, err: logs})
	if err != nil {
		return err
	}
	defer a.Close()
	if err := cfg.CheckServe(); err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	if *addr != "" {
		cfg.Addr = *addr
	}
	log.Info("starting tuxlab", cfg.LogAttrs()...)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (set TUXLAB_ADDR or --addr to a free address)", cfg.Addr, err)
	}
	return a.Serve(ctx, ln, *grace)
}

func migrate(ctx context.Context, args []string, getenv func(string) string, std stdio) error {
	if len(args) > 0 {
		return fmt.Errorf("migrate takes no arguments")
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	log := slog.New(slog.NewTextHandler(std.err, &slog.HandlerOptions{Level: cfg.LogLevel}))
	db, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(std.out, "database is up to date (%s)\n", db.Engine())
	return nil
}

func user(ctx context.Context, args []string, getenv func(string) string, std stdio) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: tuxlab user create --username U --email E --role admin|instructor|student")
	}
	fs := flag.NewFlagSet("user create", flag.ContinueOnError)
	fs.SetOutput(std.err)
	username := fs.String("username", "", "username (required)")
	email := fs.String("email", "", "e-mail address (required)")
	role := fs.String("role", "student", "admin, instructor or student")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *username == "" || *email == "" {
		return errors.New("--username and --email are required; the password is read from stdin or prompted for, never a flag")
	}
	r, ok := auth.ParseRole(*role)
	if !ok {
		return fmt.Errorf("--role must be admin, instructor or student, not %q", *role)
	}
	password, err := readPassword(std)
	if err != nil {
		return err
	}
	_, _, a, err := setup(ctx, getenv, std)
	if err != nil {
		return err
	}
	defer a.Close()
	u, err := a.Auth.CreateUser(ctx, auth.NewUser{Username: *username, Email: *email, Password: password, Role: r})
	if err != nil {
		return describe(err)
	}
	fmt.Fprintf(std.out, "created %s %q (id %d)\n", u.Role, u.Username, u.ID)
	return nil
}

// readPassword prompts twice on a terminal, or reads one line from stdin otherwise.
func readPassword(std stdio) (string, error) {
	if f, ok := std.in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(std.err, "Password: ")
		p1, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(std.err)
		if err != nil {
			return "", err
		}
		fmt.Fprint(std.err, "Repeat password: ")
		p2, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(std.err)
		if err != nil {
			return "", err
		}
		if string(p1) != string(p2) {
			return "", errors.New("the passwords do not match")
		}
		return string(p1), nil
	}
	line, err := bufio.NewReader(std.in).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", errors.New("no password on stdin: pipe it in, for example printf '%s\\n' \"$PW\" | tuxlab user create")
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// describe turns a validation error into one line per problem for the terminal.
func describe(err error) error {
	var e *errs.Error
	if !errors.As(err, &e) || len(e.Fields) == 0 {
		return err
	}
	var lines []string
	for _, f := range e.Fields {
		lines = append(lines, fmt.Sprintf("%v: %s", f.Loc[len(f.Loc)-1], f.Msg))
	}
	return errors.New(strings.Join(lines, "\n"))
}

func contentCmd(ctx context.Context, args []string, getenv func(string) string, std stdio) error {
	if len(args) != 2 || (args[0] != "import" && args[0] != "export") {
		return errors.New("usage: tuxlab content import DIR | tuxlab content export DIR")
	}
	// setup wires without seeding: this command says what to load.
	_, _, a, err := setup(ctx, getenv, std)
	if err != nil {
		return err
	}
	defer a.Close()
	dir := args[1]
	if args[0] == "export" {
		msg, err := a.ExportContent(ctx, dir)
		if err != nil {
			return err
		}
		fmt.Fprintln(std.out, msg)
		return nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory of modules (see docs/curriculum-format.md)", dir)
	}
	reports, err := a.ImportContent(ctx, os.DirFS(dir), func(format string, args ...any) {
		fmt.Fprintf(std.err, "content import: "+format+"\n", args...)
	})
	if err != nil {
		return err
	}
	for _, r := range reports {
		fmt.Fprintln(std.out, r)
	}
	return nil
}
