package mail

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"testing"
	"time"
)

func TestParseServer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		url  string
		want Server
	}{
		{"smtp://user:pa%3Ass@mail.tuxlab.org:587", Server{Host: "mail.tuxlab.org", Port: "587", Username: "user", Password: "pa:ss"}},
		{"smtp://mail.tuxlab.org", Server{Host: "mail.tuxlab.org", Port: "587"}},
		{"smtps://u:p@mail.tuxlab.org", Server{Host: "mail.tuxlab.org", Port: "465", Implicit: true, Username: "u", Password: "p"}},
		{"smtp://127.0.0.1:1025", Server{Host: "127.0.0.1", Port: "1025"}},
		{"smtp://[::1]:1025/", Server{Host: "::1", Port: "1025"}},
	} {
		got, err := ParseServer(tt.url)
		if err != nil || got != tt.want {
			t.Errorf("ParseServer(%q) = %+v, %v; want %+v", tt.url, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "mail.tuxlab.org:587", "http://mail.tuxlab.org", "smtp://", "smtp://h:25/path", "smtp://h:25?tls=1", "smtp://:25"} {
		if _, err := ParseServer(bad); err == nil {
			t.Errorf("ParseServer(%q) accepted it", bad)
		}
	}
	if r := (Server{Host: "h", Port: "587", Username: "u", Password: "secret"}).Redacted(); strings.Contains(r, "secret") {
		t.Errorf("Redacted() = %q shows the password", r)
	}
}

// TestCompose: the headers a mail needs, the subject encoded, the body in
// quoted-printable that decodes to the text, long lines and all.
func TestCompose(t *testing.T) {
	t.Parallel()
	from, _ := mail.ParseAddress("tuxlab <noreply@tuxlab.org>")
	body := "Hello,\n\nhttps://learn.tuxlab.org/reset-password?token=" + strings.Repeat("x", 80) + "\n= ünïcode\n"
	data, err := compose(from, Message{To: "ada@tuxlab.org", Subject: "Réinitialiser", Body: body}, time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	m, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Header.Get("From"); got != `"tuxlab" <noreply@tuxlab.org>` {
		t.Errorf("From %q", got)
	}
	if got := m.Header.Get("To"); got != "<ada@tuxlab.org>" {
		t.Errorf("To %q", got)
	}
	if subj, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject")); err != nil || subj != "Réinitialiser" {
		t.Errorf("Subject %q (%v)", m.Header.Get("Subject"), err)
	}
	if !strings.HasSuffix(m.Header.Get("Message-ID"), "@tuxlab.org>") || m.Header.Get("Date") == "" {
		t.Errorf("Message-ID %q, Date %q", m.Header.Get("Message-ID"), m.Header.Get("Date"))
	}
	for _, line := range strings.Split(string(data), "\r\n") {
		if len(line) > 78 {
			t.Errorf("a line of %d characters: %q", len(line), line)
		}
	}
	text, err := io.ReadAll(quotedprintable.NewReader(m.Body))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.ReplaceAll(string(text), "\r\n", "\n"); got != body {
		t.Errorf("body decodes to %q, want %q", got, body)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	q := New(nil, Options{RetryBase: time.Second, RetryMax: 5 * time.Second})
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		if got := q.backoff(i + 1); got != w {
			t.Errorf("backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
}

func TestPermanent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&textproto.Error{Code: 550, Msg: "no such mailbox"}, true},
		{errors.Join(errors.New("RCPT TO"), &textproto.Error{Code: 553}), true},
		{&textproto.Error{Code: 451, Msg: "try later"}, false},
		{errors.New("connection refused"), false},
	} {
		if got := permanent(tt.err); got != tt.want {
			t.Errorf("permanent(%v) = %v", tt.err, got)
		}
	}
}

// TestEnqueueRefusesHeaderInjection: a recipient or subject with a line
// break could add headers or recipients.
func TestEnqueueRefusesHeaderInjection(t *testing.T) {
	t.Parallel()
	q := New(nil, Options{Sender: senderFunc(nil), From: "a@tuxlab.org"})
	for _, m := range []Message{
		{To: "a@tuxlab.org\r\nBcc: b@tuxlab.org", Subject: "s"},
		{To: "a@tuxlab.org, b@tuxlab.org", Subject: "s"},
		{To: "a@tuxlab.org", Subject: "s\nBcc: b@tuxlab.org"},
		{To: "", Subject: "s"},
	} {
		if err := q.Enqueue(t.Context(), m); err == nil {
			t.Errorf("Enqueue(%+v) accepted it", m)
		}
	}
	if err := New(nil, Options{}).Enqueue(t.Context(), Message{To: "a@tuxlab.org"}); !errors.Is(err, ErrOff) {
		t.Errorf("Enqueue without a sender: %v, want ErrOff", err)
	}
}

// senderFunc is a Sender for tests that never reach it.
type senderFunc func() error

func (f senderFunc) Send(context.Context, string, string, []byte) error { return f() }
