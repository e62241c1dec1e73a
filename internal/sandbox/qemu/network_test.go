package qemu_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/qemu"
)

// TestSegment puts two machines on one private segment and a third on
// another: the first two reach each other by name (a TCP connection to the
// server's sshd, ping), the third reaches neither, none reaches a service on
// the host's loopback, a machine joining later is added to the others'
// /etc/hosts, and the segment goes once its last machine does.
func TestSegment(t *testing.T) {
	t.Parallel()
	rt, state := newRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*bootTimeout)
	defer cancel()
	for _, n := range []string{"lab-a", "lab-b", "lab-a"} { // the second lab-a finds it there
		if err := rt.EnsureNetwork(ctx, n, map[string]string{sandbox.LabelManaged: "qemu-test"}); err != nil {
			t.Fatalf("EnsureNetwork(%s): %v", n, err)
		}
	}
	spec := func(host, network string) sandbox.Spec {
		return sandbox.Spec{Name: host, Image: qemu.DefaultImage, Hostname: host, User: "learner", MemoryBytes: 384 << 20, Network: network}
	}
	if _, err := rt.Create(ctx, spec("nowhere", "lab-missing")); !errors.Is(err, sandbox.ErrGone) {
		t.Errorf("Create on a missing network = %v; want ErrGone", err)
	}
	start := func(host, network string) string {
		t.Helper()
		id, err := rt.Create(ctx, spec(host, network))
		if err != nil {
			t.Fatalf("Create %s: %v", host, err)
		}
		if err := rt.Start(ctx, id); err != nil {
			t.Fatalf("Start %s: %v", host, err)
		}
		return id
	}
	server, client, other := start("server", "lab-a"), start("client", "lab-a"), start("other", "lab-b")
	for _, id := range []string{server, client, other} {
		waitFor(t, ctx, rt, id, "ip -4 -o addr show dev eth0 | grep -q 'inet 10.77.'")
	}
	if got := run(t, ctx, rt, server, "ip -4 -o addr show dev eth0 | awk '{print $4}'"); strings.TrimSpace(got) != "10.77.1.11/24" {
		t.Errorf("the server's address = %q; want the segment's first, 10.77.1.11/24", got)
	}
	run(t, ctx, rt, server, "systemctl start ssh")

	t.Run("SameSegment", func(t *testing.T) {
		if got := strings.Fields(run(t, ctx, rt, client, "getent ahostsv4 server | head -1")); len(got) < 2 || got[0] != "10.77.1.11" {
			t.Errorf("getent hosts server on the client = %q", got)
		}
		if got := strings.Fields(run(t, ctx, rt, client, "getent ahostsv4 client | head -1")); len(got) < 2 || got[0] != "10.77.1.12" {
			t.Errorf("getent hosts client on the client = %q", got)
		}
		if got := run(t, ctx, rt, client, "timeout 20 bash -c 'echo > /dev/tcp/server/22' && echo reached; ping -c 1 -W 10 server >/dev/null && echo pinged"); got != "reached\npinged\n" {
			t.Errorf("the server's sshd and ping from the client: %q", got)
		}
		// For the logs: the segment's latency.
		t.Log(run(t, ctx, rt, client, "ping -c 5 -i 0.2 -q server | tail -1"))
	})
	t.Run("OtherSegment", func(t *testing.T) {
		if _, _, code := runCode(t, ctx, rt, other, sandbox.ExecSpec{Cmd: []string{"getent", "hosts", "server"}, User: "root"}); code == 0 {
			t.Errorf("a machine of another segment resolves server")
		}
		if got := run(t, ctx, rt, other, "timeout 10 bash -c 'echo > /dev/tcp/10.77.1.11/22' 2>/dev/null && echo reached; ping -c 1 -W 3 10.77.1.11 >/dev/null 2>&1 && echo pinged; echo done"); got != "done\n" {
			t.Errorf("the server from another segment: %q", got)
		}
	})
	t.Run("HostUnreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		accepted := make(chan struct{}, 1)
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Close()
				accepted <- struct{}{}
			}
		}()
		port := l.Addr().(*net.TCPAddr).Port
		script := ""
		for _, addr := range []string{"10.77.1.1", "10.77.1.254", "10.0.2.2"} {
			script += fmt.Sprintf("timeout 5 bash -c 'echo > /dev/tcp/%s/%d' 2>/dev/null && echo reached %s; ", addr, port, addr)
		}
		if got := run(t, ctx, rt, client, script+"echo done"); got != "done\n" {
			t.Errorf("the host's loopback service from a segment: %q", got)
		}
		select {
		case <-accepted:
			t.Errorf("the host's loopback service accepted a connection from a machine")
		default:
		}
	})
	t.Run("LateMember", func(t *testing.T) {
		late := start("late", "lab-a")
		waitFor(t, ctx, rt, late, "getent hosts server | grep -q '^10.77.1.11 '")
		waitFor(t, ctx, rt, server, "getent hosts late | grep -q '^10.77.1.13 '")
		if got := run(t, ctx, rt, server, "ping -c 1 -W 10 late >/dev/null && echo pinged"); got != "pinged\n" {
			t.Errorf("ping late from the server: %q", got)
		}
	})

	networks := filepath.Join(state, "networks")
	if err := rt.RemoveNetwork(ctx, "lab-a"); err != nil {
		t.Errorf("RemoveNetwork in use = %v; want nil", err)
	}
	if _, err := os.Stat(filepath.Join(networks, "lab-a.json")); err != nil {
		t.Errorf("RemoveNetwork removed a network in use: %v", err)
	}
	list, _ := rt.List(ctx, nil)
	for _, in := range list {
		if err := rt.Remove(ctx, in.EngineID); err != nil {
			t.Fatalf("Remove: %v", err)
		}
	}
	for _, n := range []string{"lab-a", "lab-b", "lab-b"} { // gone the second time
		if err := rt.RemoveNetwork(ctx, n); err != nil {
			t.Errorf("RemoveNetwork(%s) = %v", n, err)
		}
	}
	if left, _ := os.ReadDir(networks); len(left) > 0 {
		t.Errorf("left in %s: %v", networks, left)
	}
	if _, err := rt.Create(ctx, spec("again", "lab-a")); !errors.Is(err, sandbox.ErrGone) {
		t.Errorf("Create on a removed network = %v; want ErrGone", err)
	}
}
