package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/coder/websocket"
)

// ParsePorts reads port-forward's LOCAL:REMOTE (or one PORT for both): LOCAL
// from 0 (any free port) to 65535, REMOTE from 1 to 65535.
func ParsePorts(s string) (local, remote int, err error) {
	l, r, ok := strings.Cut(s, ":")
	if !ok {
		l, r = s, s
	}
	local, err1 := strconv.Atoi(l)
	remote, err2 := strconv.Atoi(r)
	if err1 != nil || err2 != nil || local < 0 || local > 65535 || remote < 1 || remote > 65535 {
		return 0, 0, fmt.Errorf("ports must be LOCAL:REMOTE such as 8080:80 (LOCAL 0 for any free port, REMOTE from 1 to 65535), not %q", s)
	}
	return local, remote, nil
}

// PortForward listens on 127.0.0.1:local and forwards each connection to
// port remote of sandbox id (0: the user's only running one), each through
// its own WebSocket to the server (/ws/containers/{id}/port/{port},
// docs/cli.md), until ctx ends. It says on env.Err where it listens.
func PortForward(ctx context.Context, env Env, id int64, local, remote int) error {
	c, _, err := loggedIn(env)
	if err != nil {
		return err
	}
	if id, err = c.runningSandbox(ctx, id); err != nil {
		return err
	}
	// A sandbox that is not the user's, or not running, is told at once.
	var sb Sandbox
	if err := c.Call(ctx, "GET", fmt.Sprintf("/api/containers/%d", id), nil, &sb); err != nil {
		return err
	}
	if sb.Status != "running" {
		return fmt.Errorf("sandbox %d is %s: start it first (on its page)", id, sb.Status)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(local)))
	if err != nil {
		return fmt.Errorf("listen on 127.0.0.1:%d: %w", local, err)
	}
	defer ln.Close()
	go func() { <-ctx.Done(); ln.Close() }()
	fmt.Fprintf(env.Err, "Forwarding %s to port %d of sandbox %d (Ctrl-C to stop)\n", ln.Addr(), remote, id)
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go c.forward(ctx, env, conn, id, remote)
	}
}

// forward carries one local connection to port of sandbox id.
func (c *Client) forward(ctx context.Context, env Env, conn net.Conn, id int64, port int) {
	defer conn.Close()
	ws, err := c.dialPort(ctx, id, port)
	if err != nil {
		fmt.Fprintf(env.Err, "connection from %s: %v\n", conn.RemoteAddr(), err)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	remote := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	defer remote.Close()
	go func() {
		io.Copy(remote, conn) // the local side's bytes
		cancel()
	}()
	if _, err := io.Copy(conn, remote); err != nil { // the service's bytes, until it closes
		if why, ok := refusal(err); ok {
			fmt.Fprintf(env.Err, "connection from %s: %s\n", conn.RemoteAddr(), why)
		}
	}
}

// dialPort opens the port-forward socket of port of sandbox id. A refusal
// the server tells after the upgrade (close code 4000+status) is returned
// with its detail.
func (c *Client) dialPort(ctx context.Context, id int64, port int) (*websocket.Conn, error) {
	u, err := url.Parse(c.Server)
	if err != nil {
		return nil, err
	}
	u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	u.Path += fmt.Sprintf("/ws/containers/%d/port/%d", id, port)
	h := http.Header{"Authorization": {"Bearer " + c.Token}}
	ws, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPHeader: h, HTTPClient: c.dialClient()})
	if err != nil {
		if resp != nil && resp.StatusCode/100 != 1 {
			return nil, fmt.Errorf("port %d of sandbox %d: the server answered %s: is %s a tuxlab server of this version?", port, id, resp.Status, c.Server)
		}
		return nil, fmt.Errorf("port %d of sandbox %d: %w", port, id, err)
	}
	ws.SetReadLimit(4 << 20)
	return ws, nil
}

// refusal is the server's refusal in a close frame (4000+status), if err is one.
func refusal(err error) (string, bool) {
	var ce websocket.CloseError
	if errors.As(err, &ce) && ce.Code >= 4000 && ce.Code < 5000 {
		return ce.Reason, true
	}
	return "", false
}
