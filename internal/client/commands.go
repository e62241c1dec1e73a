package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"
)

// prompter asks the user: on a terminal with prompts (secrets without
// echo), otherwise one line of stdin per question.
type prompter struct {
	env   Env
	fd    int
	tty   bool
	lines *bufio.Reader
}

func newPrompter(env Env) *prompter {
	p := &prompter{env: env, lines: bufio.NewReader(env.In)}
	if f, ok := env.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.fd, p.tty = int(f.Fd()), true
	}
	return p
}

// line asks for one line; what gives it on stdin says what if it is missing.
func (p *prompter) line(prompt, what string) (string, error) {
	if p.tty {
		fmt.Fprint(p.env.Err, prompt)
	}
	s, err := p.lines.ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && s != "") {
		return "", fmt.Errorf("no %s on stdin: type it on a terminal, or pipe it in one line each", what)
	}
	return strings.TrimRight(s, "\r\n"), nil
}

// secret asks for a line without echo on a terminal.
func (p *prompter) secret(prompt, what string) (string, error) {
	if !p.tty {
		return p.line(prompt, what)
	}
	fmt.Fprint(p.env.Err, prompt)
	b, err := term.ReadPassword(p.fd)
	fmt.Fprintln(p.env.Err)
	return string(b), err
}

// mfaRequired is the server's answer to a right password without the
// two-factor code (docs/mfa.md).
const mfaRequired = "Two-factor code required"

// Login asks for the password (and the two-factor code when the server asks
// for it), logs in to server and saves the token. An empty server is the
// saved login's, else DefaultServer.
func Login(ctx context.Context, env Env, server, username string) error {
	if server == "" {
		server = DefaultServer
		if saved, err := LoadCredentials(env.Getenv); err == nil {
			server = saved.Server
		}
	}
	c, err := NewClient(env, server, "")
	if err != nil {
		return err
	}
	p := newPrompter(env)
	if username == "" {
		if username, err = p.line("Username: ", "username"); err != nil {
			return err
		}
	}
	password, err := p.secret("Password: ", "password")
	if err != nil {
		return err
	}
	body := map[string]string{"username": username, "password": password}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	err = c.Call(ctx, http.MethodPost, "/api/auth/login", body, &tok)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusUnauthorized && apiErr.Detail == mfaRequired {
		if body["otp"], err = p.secret("Two-factor code (or a recovery code): ", "two-factor code"); err != nil {
			return err
		}
		err = c.Call(ctx, http.MethodPost, "/api/auth/login", body, &tok)
	}
	if err != nil {
		return err
	}
	path, err := SaveCredentials(env.Getenv, &Credentials{Server: c.Server, Username: username, Token: tok.AccessToken})
	if err != nil {
		return fmt.Errorf("logged in, but the token could not be saved: %w", err)
	}
	fmt.Fprintf(env.Out, "logged in to %s as %s (token in %s)\n", c.Server, username, path)
	return nil
}

// Logout revokes the saved token on its server and deletes it. A token the
// server no longer accepts is deleted all the same.
func Logout(ctx context.Context, env Env) error {
	c, creds, err := loggedIn(env)
	if err != nil {
		return err
	}
	err = c.Call(ctx, http.MethodPost, "/api/auth/logout", nil, nil)
	var apiErr *APIError
	if err != nil && !(errors.As(err, &apiErr) && apiErr.Status == http.StatusUnauthorized) {
		return fmt.Errorf("%w; the saved login is kept, run tuxlab logout again", err)
	}
	if err := removeCredentials(env.Getenv); err != nil {
		return err
	}
	fmt.Fprintf(env.Out, "logged out of %s\n", creds.Server)
	return nil
}

// Sandbox is a sandbox as GET /api/containers/sandbox lists it.
type Sandbox struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	TemplateID int64  `json:"template_id"`
	Kind       string `json:"kind"`
	Status     string `json:"status"`
}

// sandboxes lists the user's sandboxes.
func (c *Client) sandboxes(ctx context.Context) ([]Sandbox, error) {
	var list []Sandbox
	return list, c.Call(ctx, http.MethodGet, "/api/containers/sandbox", nil, &list)
}

// Sandboxes prints the user's sandboxes as a table.
func Sandboxes(ctx context.Context, env Env) error {
	c, _, err := loggedIn(env)
	if err != nil {
		return err
	}
	list, err := c.sandboxes(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(env.Out, "no sandboxes: create one on a lesson's page, or start a laboratory (tuxlab lab start ID)")
		return nil
	}
	var templates []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	if err := c.Call(ctx, http.MethodGet, "/api/sandbox-templates", nil, &templates); err != nil {
		return err
	}
	names := map[int64]string{}
	for _, t := range templates {
		names[t.ID] = t.Name
	}
	w := tabwriter.NewWriter(env.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tTEMPLATE\tKIND\tSTATUS")
	for _, s := range list {
		tpl := names[s.TemplateID]
		if tpl == "" {
			tpl = fmt.Sprintf("#%d", s.TemplateID)
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", s.ID, s.Name, tpl, s.Kind, s.Status)
	}
	return w.Flush()
}

// runningSandbox is sandbox id, or with id 0 the user's only running one.
func (c *Client) runningSandbox(ctx context.Context, id int64) (int64, error) {
	if id != 0 {
		return id, nil
	}
	list, err := c.sandboxes(ctx)
	if err != nil {
		return 0, err
	}
	var running []Sandbox
	for _, s := range list {
		if s.Status == "running" {
			running = append(running, s)
		}
	}
	if len(running) == 1 {
		return running[0].ID, nil
	}
	var lines []string
	for _, s := range list {
		lines = append(lines, fmt.Sprintf("  %d  %s (%s)", s.ID, s.Name, s.Status))
	}
	switch {
	case len(list) == 0:
		return 0, errors.New("you have no sandbox: create one on a lesson's page, or start a laboratory (tuxlab lab start ID)")
	case len(running) == 0:
		return 0, fmt.Errorf("none of your sandboxes is running: start one on its page, then name it:\n%s", strings.Join(lines, "\n"))
	}
	return 0, fmt.Errorf("%d of your sandboxes are running: name one (tuxlab shell ID):\n%s", len(running), strings.Join(lines, "\n"))
}

// labAttempt is an attempt as the laboratory routes answer it.
type labAttempt struct {
	ID          int64  `json:"id"`
	Status      string `json:"status"`
	ContainerID *int64 `json:"container_id"`
	Score       int    `json:"score"`
	Passed      bool   `json:"passed"`
	Tasks       []struct {
		Title    string   `json:"title"`
		Passed   bool     `json:"passed"`
		Feedback []string `json:"feedback"`
	} `json:"tasks"`
}

// LabStart starts laboratory id (or returns the attempt in progress) and
// says which sandbox it runs in.
func LabStart(ctx context.Context, env Env, id int64) error {
	c, _, err := loggedIn(env)
	if err != nil {
		return err
	}
	var at labAttempt
	if err := c.Call(ctx, http.MethodPost, fmt.Sprintf("/api/laboratories/%d/start", id), nil, &at); err != nil {
		return err
	}
	fmt.Fprintf(env.Out, "laboratory %d: attempt %d %s", id, at.ID, at.Status)
	if at.ContainerID != nil {
		fmt.Fprintf(env.Out, " in sandbox %d: tuxlab shell %d", *at.ContainerID, *at.ContainerID)
	}
	fmt.Fprintln(env.Out)
	return nil
}

// LabCheck runs the checks of the attempt in progress at laboratory id and
// prints each task's result; a task that fails makes an ExitError of code 1.
func LabCheck(ctx context.Context, env Env, id int64) error {
	c, _, err := loggedIn(env)
	if err != nil {
		return err
	}
	var at labAttempt
	err = c.Call(ctx, http.MethodPost, fmt.Sprintf("/api/laboratories/%d/check", id), nil, &at)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict && strings.Contains(apiErr.Detail, "start it first") {
		apiErr.Hint = fmt.Sprintf("start it with tuxlab lab start %d", id)
	}
	if err != nil {
		return err
	}
	failed := 0
	for _, t := range at.Tasks {
		mark := "PASS"
		if !t.Passed {
			mark, failed = "FAIL", failed+1
		}
		fmt.Fprintf(env.Out, "%s  %s\n", mark, t.Title)
		for _, f := range t.Feedback {
			fmt.Fprintf(env.Out, "      %s\n", f)
		}
	}
	fmt.Fprintf(env.Out, "%d of %d tasks pass (score %d%%)\n", len(at.Tasks)-failed, len(at.Tasks), at.Score)
	if failed > 0 {
		return &ExitError{Code: 1}
	}
	return nil
}
