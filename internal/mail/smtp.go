package mail

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/url"
	"strings"
	"time"
)

// Server is where mail goes, as TUXLAB_SMTP_URL gives it:
// smtp://[user:password@]host[:port] (port 587 by default; STARTTLS when the
// server offers it) or smtps://[user:password@]host[:port] (port 465 by
// default; TLS from the first byte).
type Server struct {
	Host     string
	Port     string
	Implicit bool // smtps: TLS from the first byte
	Username string
	Password string
}

// ParseServer reads an SMTP URL (see Server).
func ParseServer(raw string) (Server, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Server{}, errors.New("not a URL such as smtp://user:password@mail.example.org:587")
	}
	var s Server
	switch u.Scheme {
	case "smtp":
		s.Port = "587"
	case "smtps":
		s.Port, s.Implicit = "465", true
	default:
		return Server{}, fmt.Errorf("the scheme must be smtp:// (STARTTLS when offered) or smtps:// (TLS), not %q", u.Scheme)
	}
	s.Host = u.Hostname()
	if s.Host == "" {
		return Server{}, errors.New("the URL names no host, as in smtp://mail.example.org:587")
	}
	if p := u.Port(); p != "" {
		s.Port = p
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return Server{}, errors.New("the URL must be scheme://[user:password@]host[:port], without a path or query")
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	return s, nil
}

// Redacted is the server's URL with the password masked, for logs.
func (s Server) Redacted() string {
	scheme := "smtp"
	if s.Implicit {
		scheme = "smtps"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(s.Host, s.Port)}
	if s.Username != "" {
		u.User = url.UserPassword(s.Username, "xxxxx")
	}
	return u.String()
}

// SMTP sends mail to one Server with the standard library's client: enough
// for a submission server (STARTTLS or TLS, PLAIN authentication), and
// nothing to vendor.
type SMTP struct {
	Server Server
	// TLS is the client's TLS configuration (nil: the system's roots, the
	// server's host name); tests give their own roots.
	TLS *tls.Config
	// HelloName is the name the client gives in EHLO ("localhost" when empty).
	HelloName string
}

// Send delivers data from from to to. Over smtp:// it upgrades with
// STARTTLS when the server offers it; credentials are only ever sent
// encrypted (net/smtp's PLAIN refuses otherwise, except to localhost). The
// whole exchange ends when ctx does.
func (s *SMTP) Send(ctx context.Context, from, to string, data []byte) (err error) {
	addr := net.JoinHostPort(s.Server.Host, s.Server.Port)
	tlsConf := s.tlsConfig()
	d := &net.Dialer{}
	var conn net.Conn
	if s.Server.Implicit {
		conn, err = (&tls.Dialer{NetDialer: d, Config: tlsConf}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return fmt.Errorf("connect to %s: %w", addr, err)
	}
	// The client has no contexts: a deadline, and ctx's end, cut it short.
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c, err := smtp.NewClient(conn, s.Server.Host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("greeting of %s: %w", addr, err)
	}
	defer c.Close()
	if s.HelloName != "" {
		if err := c.Hello(s.HelloName); err != nil {
			return fmt.Errorf("EHLO: %w", err)
		}
	}
	if !s.Server.Implicit {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(tlsConf); err != nil {
				return fmt.Errorf("STARTTLS: %w", err)
			}
		}
	}
	if s.Server.Username != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return errors.New("the mail server offers no authentication, but TUXLAB_SMTP_URL has credentials")
		}
		if err := c.Auth(smtp.PlainAuth("", s.Server.Username, s.Server.Password, s.Server.Host)); err != nil {
			return fmt.Errorf("authentication: %w", err)
		}
	}
	if err := c.Mail(from); err != nil {
		return fmt.Errorf("MAIL FROM: %w", err)
	}
	if err := c.Rcpt(to); err != nil {
		return fmt.Errorf("RCPT TO: %w", err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	return c.Quit()
}

func (s *SMTP) tlsConfig() *tls.Config {
	if s.TLS != nil {
		c := s.TLS.Clone()
		if c.ServerName == "" {
			c.ServerName = s.Server.Host
		}
		return c
	}
	return &tls.Config{ServerName: s.Server.Host, MinVersion: tls.VersionTLS12}
}

// send composes m from the queue's From and hands it to the sender.
func (q *Queue) send(ctx context.Context, m Message) error {
	from, err := mail.ParseAddress(q.opt.From)
	if err != nil {
		return fmt.Errorf("TUXLAB_MAIL_FROM %q: %w", q.opt.From, err)
	}
	data, err := compose(from, m, q.opt.Now())
	if err != nil {
		return err
	}
	return q.opt.Sender.Send(ctx, from.Address, m.To, data)
}

// compose renders m as an RFC 5322 message: UTF-8 plain text in
// quoted-printable, the subject encoded when it is not ASCII.
func compose(from *mail.Address, m Message, now time.Time) ([]byte, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	domain := from.Address[strings.LastIndexByte(from.Address, '@')+1:]
	var b bytes.Buffer
	header := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	header("From", from.String())
	header("To", (&mail.Address{Address: m.To}).String())
	header("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", "<"+hex.EncodeToString(id)+"@"+domain+">")
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	header("Auto-Submitted", "auto-generated")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	if _, err := qp.Write([]byte(strings.ReplaceAll(m.Body, "\n", "\r\n"))); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
