package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/config"
)

// Mailpit is a real SMTP server for a test: github.com/axllent/mailpit,
// which keeps every mail it receives and shows it through an HTTP API.
// scripts/test.sh installs it and sets TUXLAB_TEST_SMTP=1; without that
// variable the tests that need it skip, and with it a missing mailpit
// fails them.
type Mailpit struct {
	t        testing.TB
	bin      string
	SMTPPort int
	HTTPPort int
	dir      string
	args     []string // more of mailpit's flags
	cmd      *exec.Cmd
	done     chan struct{}
}

// NeedMailpit skips t unless TUXLAB_TEST_SMTP is set, and returns the
// mailpit program, failing t when the variable is set and none is found
// (TUXLAB_TEST_MAILPIT, then PATH, then Go's bin directory).
func NeedMailpit(t testing.TB) string {
	t.Helper()
	if os.Getenv("TUXLAB_TEST_SMTP") == "" {
		t.Skip("TUXLAB_TEST_SMTP is not set: no SMTP server to test against (scripts/test.sh installs mailpit and sets it)")
	}
	if p := os.Getenv("TUXLAB_TEST_MAILPIT"); p != "" {
		return p
	}
	if p, err := exec.LookPath("mailpit"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	if p := filepath.Join(gopath, "bin", "mailpit"); fileExists(p) {
		return p
	}
	t.Fatal("TUXLAB_TEST_SMTP is set but mailpit is missing: go install github.com/axllent/mailpit@v1.33.1 (or set TUXLAB_TEST_MAILPIT to it)")
	return ""
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// NewMailpit picks two free ports for a Mailpit and starts it unless
// stopped is true (Start starts it later, as a mail server that comes
// back), with args added to its flags (TLS, authentication). It is stopped
// when t ends.
func NewMailpit(t testing.TB, stopped bool, args ...string) *Mailpit {
	t.Helper()
	m := &Mailpit{t: t, bin: NeedMailpit(t), SMTPPort: freePort(t), HTTPPort: freePort(t), dir: t.TempDir(), args: args}
	t.Cleanup(m.Stop)
	if !stopped {
		m.Start()
	}
	return m
}

// freePort returns a TCP port of 127.0.0.1 that nothing listened on a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start runs mailpit and waits until its API answers.
func (m *Mailpit) Start() {
	m.t.Helper()
	args := append([]string{"--smtp", "127.0.0.1:" + strconv.Itoa(m.SMTPPort), "--listen", "127.0.0.1:" + strconv.Itoa(m.HTTPPort),
		"--database", filepath.Join(m.dir, "mailpit.db"), "--disable-version-check", "--quiet"}, m.args...)
	m.cmd = exec.Command(m.bin, args...)
	out, err := os.Create(filepath.Join(m.dir, "mailpit.log"))
	if err != nil {
		m.t.Fatal(err)
	}
	m.cmd.Stdout, m.cmd.Stderr = out, out
	if err := m.cmd.Start(); err != nil {
		m.t.Fatalf("start mailpit: %v", err)
	}
	m.done = make(chan struct{})
	go func() { m.cmd.Wait(); out.Close(); close(m.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(m.api("/livez"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && m.smtpAnswers() {
				return
			}
		}
		select {
		case <-m.done:
			log, _ := os.ReadFile(filepath.Join(m.dir, "mailpit.log"))
			m.t.Fatalf("mailpit ended at start: %s", log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.t.Fatal("mailpit did not answer within 30s")
		}
	}
}

func (m *Mailpit) smtpAnswers() bool {
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(m.SMTPPort))
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Stop ends mailpit, if it runs.
func (m *Mailpit) Stop() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	m.cmd.Process.Kill()
	<-m.done
	m.cmd = nil
}

// URL is the TUXLAB_SMTP_URL of this server (no authentication, no TLS).
func (m *Mailpit) URL() string { return "smtp://127.0.0.1:" + strconv.Itoa(m.SMTPPort) }

// HTTPURL is the address of Mailpit's web page and API.
func (m *Mailpit) HTTPURL() string { return "http://127.0.0.1:" + strconv.Itoa(m.HTTPPort) }

func (m *Mailpit) api(path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(m.HTTPPort) + path
}

// Mail is a message as Mailpit received it.
type Mail struct {
	ID      string `json:"ID"`
	Subject string `json:"Subject"`
	From    struct {
		Address string `json:"Address"`
	} `json:"From"`
	To []struct {
		Address string `json:"Address"`
	} `json:"To"`
	Text string `json:"Text"` // the plain text body, decoded
}

// Messages lists the mails received so far, newest first, without their bodies.
func (m *Mailpit) Messages() []Mail {
	m.t.Helper()
	var list struct {
		Messages []Mail `json:"messages"`
	}
	m.get("/api/v1/messages?limit=1000", &list)
	return list.Messages
}

// Message returns the mail with id, body included.
func (m *Mailpit) Message(id string) Mail {
	m.t.Helper()
	var msg Mail
	m.get("/api/v1/message/"+url.PathEscape(id), &msg)
	return msg
}

// WaitFor waits (up to a minute) for a mail to address and returns it,
// body included. It fails the test if none arrives.
func (m *Mailpit) WaitFor(address string) Mail {
	m.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for _, msg := range m.Messages() {
			for _, to := range msg.To {
				if strings.EqualFold(to.Address, address) {
					return m.Message(msg.ID)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.t.Fatalf("no mail to %s within a minute", address)
	return Mail{}
}

func (m *Mailpit) get(path string, v any) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", m.api(path), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatalf("mailpit API: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		m.t.Fatalf("mailpit API %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		m.t.Fatalf("mailpit API %s: %v", path, err)
	}
}

// WithSMTP configures mail to the server at smtpURL, from
// tuxlab@tuxlab.org, with links to publicURL; the queue polls every 50 ms
// and retries after 100 ms (doubling), so a test waits little.
func WithSMTP(smtpURL, publicURL string) Option {
	return func(c *config.Config) {
		c.SMTPURL = config.Secret(smtpURL)
		c.MailFrom = "tuxlab <tuxlab@tuxlab.org>"
		c.PublicURL = publicURL
		c.MailPoll = 50 * time.Millisecond
		c.MailRetryBase = 100 * time.Millisecond
	}
}

// RunMail runs e's mail worker until the test ends, as Serve's background
// work does, and waits for it to stop before the app closes.
func (e *Env) RunMail() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.App.Mail.Run(ctx) }()
	e.T.Cleanup(func() { cancel(); <-done })
}

// String describes m for failure messages.
func (m Mail) String() string { return fmt.Sprintf("mail %s %q to %v", m.ID, m.Subject, m.To) }
