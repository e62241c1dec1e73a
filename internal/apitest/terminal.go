package apitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Terminal is a learner's terminal socket, for tests: what it is given is
// typed into the shell, and what the shell prints is read in the background
// from the moment it opens (so the server never waits on the test, and pings
// are answered).
type Terminal struct {
	t        testing.TB
	conn     *websocket.Conn
	prepared bool // typedSetup was typed

	mu      sync.Mutex
	out     []byte           // everything the shell printed
	control []map[string]any // control messages, in order
	ended   error            // why reading stopped; nil while open
	changed chan struct{}    // closed and replaced whenever the above change
	done    chan struct{}    // closed once reading has stopped
}

// TerminalFrame is the most a Terminal sends in one frame, well below the
// server's 64 KiB: longer input goes in several, as typing or pasting would.
const TerminalFrame = 4 << 10

// OpenTerminal opens the terminal at path (a terminal_url such as
// "/ws/terminal/7") with the user's token, at cols × rows, and closes it
// when the test ends. A refused terminal fails the test.
func (e *Env) OpenTerminal(t testing.TB, path, token string, cols, rows int) *Terminal {
	t.Helper()
	return e.ReopenTerminal(t, path, token, cols, rows, "")
}

// ReopenTerminal is OpenTerminal that asks to reattach to terminal session
// session (the id of a Terminal's Session message); "" opens a new shell.
func (e *Env) ReopenTerminal(t testing.TB, path, token string, cols, rows int, session string) *Terminal {
	t.Helper()
	q := url.Values{"token": {token}, "cols": {strconv.Itoa(cols)}, "rows": {strconv.Itoa(rows)}}
	if session != "" {
		q.Set("session", session)
	}
	return e.DialTerminal(t, path+"?"+q.Encode(), nil)
}

// DialTerminal opens the terminal socket at target (a terminal_url and its
// query, sent as they are) with the request headers header, and closes it
// when the test ends. A refused upgrade fails the test; a terminal refused
// after the upgrade ends its socket, which ExpectClosed checks.
func (e *Env) DialTerminal(t testing.TB, target string, header http.Header) *Terminal {
	t.Helper()
	return DialTerminalURL(t, "ws"+strings.TrimPrefix(e.URL, "http")+target, header)
}

// DialTerminalURL is DialTerminal at a whole ws:// address, for a server
// that is not the Env's own (one started with App.Serve).
func DialTerminalURL(t testing.TB, wsURL string, header http.Header) *Terminal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		path, _, _ := strings.Cut(wsURL, "?") // not the token
		status := "no response"
		if resp != nil {
			status = resp.Status
		}
		t.Fatalf("open the terminal %s (a refused terminal must still be upgraded, to tell why): %v (%s)", path, err, status)
	}
	conn.SetReadLimit(1 << 20)
	tm := &Terminal{t: t, conn: conn, changed: make(chan struct{}), done: make(chan struct{})}
	go tm.read()
	t.Cleanup(func() { conn.CloseNow() })
	return tm
}

// read collects output and control messages until the socket ends.
func (tm *Terminal) read() {
	defer close(tm.done)
	for {
		mt, data, err := tm.conn.Read(context.Background())
		tm.mu.Lock()
		switch {
		case err != nil:
			tm.ended = err
		case mt == websocket.MessageBinary:
			tm.out = append(tm.out, data...)
		default:
			var m map[string]any
			if json.Unmarshal(data, &m) != nil {
				m = map[string]any{"type": "not JSON", "text": string(data)}
			}
			tm.control = append(tm.control, m)
		}
		close(tm.changed)
		tm.changed = make(chan struct{})
		tm.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Type sends s to the shell as keystrokes, in frames of at most TerminalFrame.
func (tm *Terminal) Type(s string) {
	tm.t.Helper()
	for len(s) > 0 {
		n := min(len(s), TerminalFrame)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := tm.conn.Write(ctx, websocket.MessageBinary, []byte(s[:n]))
		cancel()
		if err != nil {
			tm.t.Fatalf("typing into the terminal: %v; it printed %s", err, tm.Tail())
		}
		s = s[n:]
	}
}

// SendControl sends the control message m (a JSON text frame), as the page
// does for a resize.
func (tm *Terminal) SendControl(m map[string]any) {
	tm.t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		tm.t.Fatalf("encoding the control message %v: %v", m, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tm.conn.Write(ctx, websocket.MessageText, b); err != nil {
		tm.t.Fatalf("sending the control message %s: %v; the terminal printed %s", b, err, tm.Tail())
	}
}

// TerminalWait is how long AwaitText and Exchange wait, which only guards
// against a hung test.
const TerminalWait = 30 * time.Second

// AwaitText waits until the output from byte offset from on contains s, as
// it came (escape sequences included), failing as Await does.
func (tm *Terminal) AwaitText(s string, from int) {
	tm.t.Helper()
	tm.Await(regexp.MustCompile(regexp.QuoteMeta(s)), from, TerminalWait)
}

// Exchange types input and waits until what the terminal printed from then
// on contains want.
func (tm *Terminal) Exchange(input, want string) {
	tm.t.Helper()
	from := len(tm.Output())
	tm.Type(input)
	tm.AwaitText(want, from)
}

// Output is everything the shell printed so far, as it came.
func (tm *Terminal) Output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return string(tm.out)
}

// Control is every control message received so far.
func (tm *Terminal) Control() []map[string]any {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return append([]map[string]any(nil), tm.control...)
}

// Text is the shell's output from byte offset from on, as a reader sees it:
// without escape sequences and carriage returns.
func (tm *Terminal) Text(from int) string {
	out := tm.Output()
	return plain(out[min(from, len(out)):])
}

// Tail is the end of the shell's output as text, enough to see where it
// stopped, and the control messages, for failure messages.
func (tm *Terminal) Tail() string {
	s := tm.Text(0)
	if len(s) > 3000 {
		s = "…" + s[len(s)-3000:]
	}
	return fmt.Sprintf("%q (control messages %v)", s, tm.Control())
}

// escapes matches the escape sequences a terminal prints (CSI, OSC and
// two-character ones), which plain drops.
var escapes = regexp.MustCompile(`\x1b(\[[0-9;?<=>]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78DEHM])`)

// plain removes a terminal's escape sequences and carriage returns from s.
func plain(s string) string {
	return strings.ReplaceAll(escapes.ReplaceAllString(s, ""), "\r", "")
}

// Await waits until re matches the output from byte offset from on and
// returns the submatches, failing the test when the socket ends first or
// within passes (which only guards against a hung test).
func (tm *Terminal) Await(re *regexp.Regexp, from int, within time.Duration) []string {
	tm.t.Helper()
	m, ended := tm.await(re, from, within)
	if ended != nil {
		tm.t.Fatalf("the terminal ended (%v) before %s; it printed %s", ended, re, tm.Tail())
	}
	return m
}

// await is Await that returns why the socket ended instead of failing.
func (tm *Terminal) await(re *regexp.Regexp, from int, within time.Duration) ([]string, error) {
	tm.t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		tm.mu.Lock()
		m := re.FindSubmatch(tm.out[min(from, len(tm.out)):])
		ended, changed := tm.ended, tm.changed
		tm.mu.Unlock()
		switch {
		case m != nil:
			out := make([]string, len(m))
			for i, b := range m {
				out[i] = string(b)
			}
			return out, nil
		case ended != nil:
			return nil, ended
		}
		select {
		case <-changed:
		case <-deadline.C:
			tm.t.Fatalf("still waiting for %s after %s; the terminal printed %s", re, within, tm.Tail())
		}
	}
}

// Run is a script typed into the terminal: how it ended and what the
// terminal showed meanwhile (the typed lines' echo included).
type Run struct {
	Code int // its exit status, or the shell's when the terminal ended first
	// Ended: the terminal ended before the script did, as it does when a
	// command fails (errexit ends the shell the script runs in).
	Ended      bool
	Transcript string
}

// typedSetup makes the learner's interactive bash take typed text as it is:
// tabs are inserted rather than completed, bytes above ASCII are kept, and
// "!" is not history expansion.
const typedSetup = "bind 'set disable-completion on'; bind 'set convert-meta off'; bind 'set input-meta on'; " +
	"bind 'set output-meta on'; set +H\n"

// TypeScript types a script written for `bash -e -s` at the prompt of the
// terminal's interactive bash and waits for it to end (at most within, which
// only guards against a hung test). It runs in the learner's own shell, as
// its lines would typed one by one: a here-document sourced from the home
// directory with errexit on (and nounset and pipefail off, whatever an
// earlier script left), followed by a marker carrying its exit status. So
// what it starts in the background is a job of that shell, which a hang-up
// ends unless nohup, setsid or disown protect it; a child `bash -s` would
// have taken its jobs out of the shell's reach, and they would all survive.
// A command that fails ends the shell, as errexit does at a prompt: the Run
// is then Ended, with the shell's exit status and the control messages.
func (tm *Terminal) TypeScript(script string, within time.Duration) Run {
	tm.t.Helper()
	nonce := fmt.Sprintf("%08x", rand.Uint32())
	end := "TUXLAB_TYPED_" + nonce
	if strings.Contains(script, end) {
		tm.t.Fatalf("the script contains its own end line %s", end)
	}
	if !strings.HasSuffix(script, "\n") {
		script += "\n"
	}
	from := len(tm.Output())
	if !tm.prepared {
		tm.Type(typedSetup)
		tm.prepared = true
	}
	// The marker's printed form ("typed-NONCE=STATUS") is not in its echo.
	tm.Type("cd; set +u; set +o pipefail; set -e; . /dev/stdin <<'" + end + "'; printf 'typed-%s=%s\\n' " + nonce +
		" \"$?\"; set +e\n" + script + end + "\n")
	m, ended := tm.await(regexp.MustCompile(`typed-`+nonce+`=([0-9]+)\r?\n`), from, within)
	if ended != nil {
		run := Run{Code: -1, Ended: true, Transcript: fmt.Sprintf("%s\n[the terminal ended: %v; control messages %v]", tm.Text(from), ended, tm.Control())}
		for _, c := range tm.Control() {
			if code, ok := c["code"].(float64); ok && c["type"] == "exit" {
				run.Code = int(code)
			}
		}
		return run
	}
	code, _ := strconv.Atoi(m[1])
	return Run{Code: code, Transcript: tm.Text(from)}
}

// Hangup closes the socket normally, as a learner closing the terminal's
// tab does, and waits for the closing handshake; WaitTerminalsClosed then
// waits for the server to have finished with the terminal.
func (tm *Terminal) Hangup() {
	tm.t.Helper()
	err := tm.conn.Close(websocket.StatusNormalClosure, "bye")
	<-tm.done
	if ce := (websocket.CloseError{}); err != nil && !errors.As(err, &ce) {
		tm.t.Logf("closing the terminal: %v", err)
	}
}

// AwaitControl waits until a control message of type typ has come and
// returns the first, failing the test when the socket ends first or within
// passes (which only guards against a hung test).
func (tm *Terminal) AwaitControl(typ string, within time.Duration) map[string]any {
	tm.t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		tm.mu.Lock()
		ended, changed := tm.ended, tm.changed
		for _, m := range tm.control {
			if m["type"] == typ {
				tm.mu.Unlock()
				return m
			}
		}
		tm.mu.Unlock()
		if ended != nil {
			tm.t.Fatalf("the terminal ended (%v) before a %q message; it printed %s", ended, typ, tm.Tail())
		}
		select {
		case <-changed:
		case <-deadline.C:
			tm.t.Fatalf("still waiting for a %q message after %s; the terminal printed %s", typ, within, tm.Tail())
		}
	}
}

// Session is the id of the terminal session the socket is attached to (the
// server's first message), for ReopenTerminal.
func (tm *Terminal) Session() string {
	tm.t.Helper()
	id, _ := tm.AwaitControl("session", 30*time.Second)["id"].(string)
	if id == "" {
		tm.t.Fatalf("a session message without an id: %v", tm.Control())
	}
	return id
}

// Drop ends the socket without a closing handshake, as a network that
// fails or a browser that is killed does: the server detaches the terminal
// and keeps the shell for the grace.
func (tm *Terminal) Drop() {
	tm.conn.CloseNow()
	<-tm.done
}

// End sends the close message, as the page's End session button does, and
// waits until the server has closed the socket: the terminal hangs up at
// once.
func (tm *Terminal) End() {
	tm.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tm.conn.Write(ctx, websocket.MessageText, []byte(`{"type":"close"}`)); err != nil {
		tm.t.Fatalf("sending the close message: %v", err)
	}
	tm.Ended(time.Minute)
}

// Ended waits until the socket has ended and returns why (a
// websocket.CloseError when the server closed it), failing after within,
// which only guards against a hang.
func (tm *Terminal) Ended(within time.Duration) error {
	tm.t.Helper()
	select {
	case <-tm.done:
	case <-time.After(within):
		tm.t.Fatalf("the terminal is still open after %s; it printed %s", within, tm.Tail())
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.ended
}

// WaitTerminalsClosed waits until the server has finished with every
// terminal it had open, their processes reaped (a terminal gives its place
// back last), failing after within, which only guards against a hang.
func (e *Env) WaitTerminalsClosed(t testing.TB, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); e.App.Terminals.Open() > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d terminals still open %s after they were closed", e.App.Terminals.Open(), within)
		}
	}
}

// ExpectClosed waits until the server has closed the socket and checks that
// it said why as a terminal does: its last error message carries status and
// detail, and the close frame has the code 4000+status and detail as its
// reason. Every text frame must have been JSON.
func (tm *Terminal) ExpectClosed(status int, detail string) {
	tm.t.Helper()
	ended := tm.Ended(TerminalWait)
	var ce websocket.CloseError
	if !errors.As(ended, &ce) {
		tm.t.Fatalf("the terminal did not close: %v; control %v", ended, tm.Control())
	}
	var errMsg map[string]any
	for _, m := range tm.Control() {
		switch m["type"] {
		case "not JSON":
			tm.t.Fatalf("text frame is not JSON: %q", m["text"])
		case "error":
			errMsg = m
		}
	}
	if errMsg == nil || errMsg["status"] != float64(status) || errMsg["detail"] != detail {
		tm.t.Fatalf("error message %v, want status %d and detail %q", errMsg, status, detail)
	}
	if ce.Code != websocket.StatusCode(4000+status) || ce.Reason != detail {
		tm.t.Fatalf("closed with %d %q, want %d %q", ce.Code, ce.Reason, 4000+status, detail)
	}
}
