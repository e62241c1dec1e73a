// Package client is tuxlab's command-line client: it talks to any tuxlab
// server over its public API only (the JSON routes under /api/ and the
// terminal WebSocket), as the web page does. cmd/tuxlab parses the arguments
// and calls the commands here; docs/cli.md describes them.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultServer is the server login talks to without --server: the address
// `tuxlab serve` listens on by default.
const DefaultServer = "http://127.0.0.1:8000"

// Env is what a command reads and writes: its standard streams and the
// process environment (passed in, so tests run commands side by side).
type Env struct {
	In       io.Reader
	Out, Err io.Writer
	Getenv   func(string) string
	// HTTP is the client for API calls; nil is a client with a one-minute
	// timeout per call.
	HTTP *http.Client
}

// ExitError ends the program with Code, after printing Msg (when not empty).
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Msg
}

// APIError is an answer of the server other than 2xx.
type APIError struct {
	Status int
	// Detail is the server's message ({"detail": ...}, or the 422 list
	// joined into one line per field).
	Detail string
	// Hint says what to do next, when there is something to say.
	Hint string
}

func (e *APIError) Error() string {
	msg := e.Detail
	if msg == "" {
		msg = fmt.Sprintf("the server answered %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Client calls one tuxlab server with one user's token.
type Client struct {
	Server string // http(s)://host[:port], no trailing slash
	Token  string
	HTTP   *http.Client
}

// NewClient returns a client of server (with token, "" before login).
func NewClient(env Env, server, token string) (*Client, error) {
	server, err := normalizeServer(server)
	if err != nil {
		return nil, err
	}
	h := env.HTTP
	if h == nil {
		h = &http.Client{Timeout: time.Minute}
	}
	return &Client{Server: server, Token: token, HTTP: h}, nil
}

// normalizeServer checks a server address and drops a trailing slash.
func normalizeServer(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not a server address: give one such as http://127.0.0.1:8000 or https://tuxlab.example.org", s)
	}
	return strings.TrimRight(u.Scheme+"://"+u.Host+u.Path, "/"), nil
}

// Call sends method path with body (nil, or a value sent as JSON) and
// decodes a JSON answer into out (when not nil).
func (c *Client) Call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Server+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach %s: %w (is the server running? log in to another one with tuxlab login --server URL)", c.Server, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return c.apiError(resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not what a tuxlab server sends (%w): is %s a tuxlab server?", method, path, err, c.Server)
	}
	return nil
}

// apiError reads the contract's error body of an answer with status.
func (c *Client) apiError(status int, body []byte) *APIError {
	e := &APIError{Status: status, Detail: detailOf(body)}
	switch {
	case status == http.StatusUnauthorized && c.Token != "":
		e.Hint = "your token expired or was revoked: run tuxlab login"
	case status == http.StatusServiceUnavailable:
		e.Hint = "try again later"
	}
	return e
}

// detailOf reads {"detail": "..."} or the 422 list {"detail": [{"loc", "msg"}]}.
func detailOf(body []byte) string {
	var b struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &b) != nil || b.Detail == nil {
		return ""
	}
	var s string
	if json.Unmarshal(b.Detail, &s) == nil {
		return s
	}
	var list []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	if json.Unmarshal(b.Detail, &list) != nil {
		return ""
	}
	var lines []string
	for _, f := range list {
		if len(f.Loc) > 0 {
			lines = append(lines, fmt.Sprintf("%v: %s", f.Loc[len(f.Loc)-1], f.Msg))
		} else {
			lines = append(lines, f.Msg)
		}
	}
	return strings.Join(lines, "; ")
}
