package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/sandbox"
)

func TestClientPortForward(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	learner := e.CreateUser("ada", auth.RoleStudent)
	u := newUser(t)
	u.login(e, "ada")
	id := createSandbox(t, e, learner, templateNamed(t, e, "BusyBox"))
	// An echo service on port 7000 of the sandbox, for many connections.
	res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(learner.ID), id, sandbox.Script{Text: `#!/bin/sh
/.tuxlab/bin/sh -c '/.tuxlab/bin/nc -ll -p 7000 -e /.tuxlab/bin/cat' >/dev/null 2>&1 </dev/null &
i=0; while [ $i -lt 100 ]; do /.tuxlab/bin/netstat -ltn | /.tuxlab/bin/grep -q ':7000 ' && exit 0; /.tuxlab/bin/sleep 0.1; i=$((i+1)); done; exit 1`})
	if err != nil || !res.OK() {
		t.Fatalf("echo service: %v %v", res, err)
	}

	if _, _, err := u.run("", "port-forward", "999999", "0:7000"); err == nil || !strings.Contains(err.Error(), "Container not found") {
		t.Fatalf("port-forward to another's or no sandbox: %v", err)
	}
	if _, _, err := u.run("", "port-forward", fmt.Sprint(id), "0:70000"); err == nil || !strings.Contains(err.Error(), "LOCAL:REMOTE") {
		t.Fatalf("a bad port: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	errOut, errW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"port-forward", fmt.Sprint(id), "0:7000"}, u.getenv, strings.NewReader(""), io.Discard, errW)
		errW.Close()
	}()
	line, err := bufio.NewReader(errOut).ReadString('\n')
	m := regexp.MustCompile(`^Forwarding (127\.0\.0\.1:\d+) to port 7000 of sandbox \d+`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("port-forward said %q (%v)", line, err)
	}
	go io.Copy(io.Discard, errOut)
	for i := range 2 { // one socket per connection
		conn, err := net.Dial("tcp", m[1])
		if err != nil {
			t.Fatal(err)
		}
		msg := fmt.Sprintf("hello %d through the forward\n", i)
		fmt.Fprint(conn, msg)
		got, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if got != msg {
			t.Fatalf("echo %q, want %q (%v)", got, msg, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("port-forward after Ctrl-C: %v", err)
	}
}
