package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/coder/websocket"
)

// maxFrame is the largest frame a client may send (docs/terminal.md).
const maxFrame = 64 << 10

// terminal is one terminal socket of a sandbox (docs/terminal.md): binary
// frames are the terminal's bytes, text frames JSON control messages.
type terminal struct {
	conn *websocket.Conn
	// output receives the terminal's bytes, in order, from the reading goroutine.
	output func([]byte)
	// notice receives the control messages worth telling the user.
	notice func(string)

	mu       sync.Mutex
	exitCode *int   // from {"type":"exit"}
	detail   string // from {"type":"error","status":N} or a close frame
	status   int    // N of that error message
	opened   bool   // the session message came: a shell was started
	done     chan struct{}
	readErr  error
}

// dialTerminal opens a terminal on sandbox id of cols × rows (0: the
// server's default) and starts reading it.
func (c *Client) dialTerminal(ctx context.Context, id int64, cols, rows int, output func([]byte), notice func(string)) (*terminal, error) {
	u, err := url.Parse(c.Server)
	if err != nil {
		return nil, err
	}
	u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	u.Path += fmt.Sprintf("/ws/terminal/%d", id)
	if cols > 0 && rows > 0 {
		u.RawQuery = fmt.Sprintf("cols=%d&rows=%d", min(cols, 1000), min(rows, 1000))
	}
	h := http.Header{"Authorization": {"Bearer " + c.Token}}
	conn, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPHeader: h, HTTPClient: c.dialClient()})
	if err != nil {
		if resp != nil && resp.StatusCode/100 != 1 {
			return nil, fmt.Errorf("open the terminal of sandbox %d: the server answered %s: is %s a tuxlab server?", id, resp.Status, c.Server)
		}
		return nil, fmt.Errorf("open the terminal of sandbox %d: %w", id, err)
	}
	conn.SetReadLimit(4 << 20)
	t := &terminal{conn: conn, output: output, notice: notice, done: make(chan struct{})}
	go t.read()
	return t, nil
}

// dialClient is c's HTTP client without its overall timeout, which would
// end a terminal after a minute.
func (c *Client) dialClient() *http.Client {
	h := *c.HTTP
	h.Timeout = 0
	return &h
}

// control is a control message of the server.
type control struct {
	Type    string `json:"type"`
	Code    int    `json:"code"`
	Detail  string `json:"detail"`
	Status  int    `json:"status"`
	Reason  string `json:"reason"`
	Seconds int    `json:"seconds"`
}

// read hands the terminal's output on until the socket ends.
func (t *terminal) read() {
	defer close(t.done)
	for {
		typ, data, err := t.conn.Read(context.Background())
		if err != nil {
			t.mu.Lock()
			t.readErr = err
			var ce websocket.CloseError
			// A normal close (after the shell's exit, or the client's own)
			// gives no reason to tell; any other close's reason is the server's.
			if errors.As(err, &ce) && ce.Code != websocket.StatusNormalClosure && ce.Reason != "" && t.detail == "" {
				t.detail = ce.Reason
			}
			t.mu.Unlock()
			return
		}
		if typ == websocket.MessageBinary {
			t.output(data)
			continue
		}
		var m control
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		t.mu.Lock()
		switch m.Type {
		case "session":
			t.opened = true
		case "exit":
			code := m.Code
			t.exitCode = &code
		case "error":
			if m.Status != 0 {
				t.detail, t.status = m.Detail, m.Status
			} else if t.notice != nil {
				t.notice("the server did not understand a message: " + m.Detail)
			}
		case "detached":
			t.detail = "this terminal was opened elsewhere (another tab or client took it over)"
		case "expiring":
			if t.notice != nil {
				what := "the terminal closes for lack of input"
				if m.Reason == "lifetime" {
					what = "the sandbox reaches its maximum lifetime and will be removed"
				}
				t.notice(fmt.Sprintf("in %d s %s", m.Seconds, what))
			}
		}
		t.mu.Unlock()
	}
}

// write sends b as typed input, in frames the server accepts.
func (t *terminal) write(ctx context.Context, b []byte) error {
	for len(b) > 0 {
		n := min(len(b), maxFrame)
		if err := t.conn.Write(ctx, websocket.MessageBinary, b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// resize tells the server the terminal's new size.
func (t *terminal) resize(ctx context.Context, cols, rows int) error {
	m, _ := json.Marshal(map[string]any{"type": "resize", "cols": min(max(cols, 1), 1000), "rows": min(max(rows, 1), 1000)})
	return t.conn.Write(ctx, websocket.MessageText, m)
}

// hangup ends the terminal: its shell is hung up at once (the close
// message, then a normal close), not kept for a reattach.
func (t *terminal) hangup() {
	ctx, cancel := context.WithTimeout(context.Background(), maxCloseWait)
	defer cancel()
	t.conn.Write(ctx, websocket.MessageText, []byte(`{"type":"close"}`))
	t.conn.Close(websocket.StatusNormalClosure, "")
}

// ended returns how the terminal ended: the shell's exit code (nil when it
// did not exit) and the server's reason, when it gave one.
func (t *terminal) ended() (*int, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.detail == "" && t.exitCode == nil && t.readErr != nil && websocket.CloseStatus(t.readErr) == -1 {
		return nil, "the connection to the server was lost: " + t.readErr.Error()
	}
	return t.exitCode, t.detail
}

// endStatus is the HTTP status of the error that ended the terminal (0: none).
func (t *terminal) endStatus() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status
}

// closedWhy says why the terminal of sandbox id ended, with the server's
// reason: it was refused (no shell was started) or closed.
func (t *terminal) closedWhy(id int64, reason string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.opened {
		return fmt.Sprintf("cannot open a terminal on sandbox %d: %s", id, reason)
	}
	return "the terminal was closed: " + reason
}
