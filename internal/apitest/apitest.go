// Package apitest starts the real tuxlab application behind a real HTTP server
// for end-to-end tests, on every engine the run covers, and checks every
// response against the OpenAPI document on the way.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tuxlab/internal/app"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// Secret signs the tokens of every test server.
const Secret = "apitest-secret-0123456789abcdef0123456789abcdef"

// Password is the password of every fixture user.
const Password = "Fixture-pass-1"

// Env is one running tuxlab for a test.
type Env struct {
	T      testing.TB
	Engine store.Engine
	Config config.Config
	App    *app.App
	DB     *store.DB
	Server *httptest.Server
	URL    string
	tokens *auth.Tokens
}

// Option adjusts the configuration of an Env before it starts.
type Option func(*config.Config)

// Each runs fn as a parallel subtest per engine, each with its own server and
// database, so nothing is shared but the container engine.
func Each(t *testing.T, fn func(t *testing.T, e *Env), opts ...Option) {
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			fn(t, New(t, eng, opts...))
		})
	}
}

// New starts tuxlab on engine eng and stops it when t ends. A server whose
// sandboxes run on Kubernetes in no namespace (RequireKube's) gets a
// namespace of its own.
func New(t testing.TB, eng store.Engine, opts ...Option) *Env {
	t.Helper()
	dsn, path := storetest.URL(t, eng)
	env := map[string]string{
		"TUXLAB_DATA_DIR":       t.TempDir(),
		"DATABASE_URL":          dsn,
		"SECRET_KEY":            Secret,
		"TUXLAB_AUTH_RATE_IP":   "100000",
		"TUXLAB_AUTH_RATE_USER": "100000",
		"TUXLAB_BCRYPT_WORKERS": "2",
		// Warm pools run only in the tests that ask for one (and run Background).
		"TUXLAB_SANDBOX_POOL_SIZE": "0",
		// Tests start empty; the lesson tests load a curriculum themselves.
		"TUXLAB_BUNDLED_CURRICULUM": "false",
		// A test that runs the background work does not boot a machine to
		// save its state (internal/sandbox/qemu tests the warm start).
		"TUXLAB_MACHINE_WARM": "false",
	}
	if dsn == "" {
		env["DATABASE_URL"] = "sqlite:" + path
	}
	// Machines live in a directory of this test's (a short path: QEMU's unix
	// sockets are limited to 108 bytes), removed with them when it ends.
	env["TUXLAB_MACHINE_STATE_DIR"] = machineStateDir(t)
	if dir := os.Getenv("TUXLAB_MACHINE_DIR"); dir != "" {
		env["TUXLAB_MACHINE_DIR"] = dir
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	// Tests hash at bcrypt's lowest cost: the rules are the same, the time is not.
	cfg.BcryptCost = bcrypt.MinCost
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.SandboxEngine == "kubernetes" && cfg.KubeNamespace == "" {
		cfg.KubeNamespace = kubeNamespace(t, cfg.Kubeconfig)
	}
	return start(t, eng, cfg)
}

// Replica starts a second tuxlab on e's database, as another replica of the
// same install would run: its own process state (caches, rate limits) and
// server, the same rows and secret. opts adjust its configuration.
func (e *Env) Replica(opts ...Option) *Env {
	e.T.Helper()
	cfg := e.Config
	for _, o := range opts {
		o(&cfg)
	}
	return start(e.T, e.Engine, cfg)
}

// start runs tuxlab with cfg, migrating its database, until t ends.
func start(t testing.TB, eng store.Engine, cfg config.Config) *Env {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("TUXLAB_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx := context.Background()
	db, err := app.Open(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(ctx, cfg, log, db)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		a.Close()
		t.Fatal(err)
	}
	srv := httptest.NewServer(Validating(t, a.Server, a.Server.OpenAPI()))
	t.Cleanup(func() {
		srv.Close()
		// Terminals end before their sandboxes go, so their processes are
		// reaped cleanly and no terminal outlives the test.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := a.Terminals.Shutdown(ctx); err != nil {
			t.Errorf("terminals did not end: %v", err)
		}
		removeEngineContainers(a.Sandboxes.Instance())
		removeMachines(cfg.MachineStateDir, a.Sandboxes.Instance())
		a.Close()
	})
	return &Env{T: t, Engine: eng, Config: cfg, App: a, DB: db, Server: srv, URL: srv.URL,
		tokens: auth.NewTokens([]byte(cfg.SecretKey), cfg.TokenTTL, nil)}
}

var (
	fixtureHashOnce sync.Once
	fixtureHash     string
)

// passwordHash is the bcrypt hash of Password, computed once per test binary so
// fixtures do not pay bcrypt's cost each time. Real registration tests hash for real.
func passwordHash() string {
	fixtureHashOnce.Do(func() {
		h, err := bcrypt.GenerateFromPassword([]byte(Password), bcrypt.MinCost)
		if err != nil {
			panic(err)
		}
		fixtureHash = string(h)
	})
	return fixtureHash
}

// User is a fixture user with a ready token.
type User struct {
	*auth.User
	Token string
}

// CreateUser stores a user with role and Password straight through the store
// and returns it with a valid token.
func (e *Env) CreateUser(username string, role auth.Role) *User {
	e.T.Helper()
	now := e.DB.Now().UTC()
	u := &auth.User{Username: username, Email: strings.ToLower(username) + "@tuxlab.org", PasswordHash: passwordHash(),
		Role: role, IsActive: true, PasswordChangedAt: now.Add(-1e9), CreatedAt: now, UpdatedAt: now, EmailVerifiedAt: &now}
	if err := e.DB.Users().CreateUser(context.Background(), u); err != nil {
		e.T.Fatalf("create user %s: %v", username, err)
	}
	return &User{User: u, Token: e.Token(u)}
}

// Token issues a valid token for u, as login would.
func (e *Env) Token(u *auth.User) string {
	e.T.Helper()
	tok, err := e.tokens.Issue(u)
	if err != nil {
		e.T.Fatal(err)
	}
	if u.Role == auth.RoleAdmin {
		markAdmin(tok)
	}
	return tok
}

// Response is a finished HTTP exchange.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test when it is not JSON.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %q: %v", r.Body, err)
	}
}

// Detail returns the string detail of an error body ("" when it is not one).
func (r *Response) Detail() string {
	var b struct {
		Detail any `json:"detail"`
	}
	json.Unmarshal(r.Body, &b)
	s, _ := b.Detail.(string)
	return s
}

// Request describes a call: body may be nil, a string or []byte sent as is, or
// any value sent as JSON. A body goes with Content-Type: application/json
// unless Header has a Content-Type key: its values (none, to send no
// Content-Type at all) are sent instead.
type Request struct {
	Method, Path string
	Token        string
	Body         any
	Header       http.Header
}

// Do performs req against the server, failing the test on a transport
// error. Call it only from the test's own goroutine; goroutines use Send or
// DoConcurrently, which report through the test's goroutine.
func (e *Env) Do(req Request) *Response {
	e.T.Helper()
	r, err := e.Send(req)
	if err != nil {
		e.T.Fatal(err)
	}
	return r
}

// DoConcurrently performs every request at once, each in its own goroutine,
// and returns the responses in order once all have answered. A transport
// error fails the test here, in the caller's goroutine.
func (e *Env) DoConcurrently(reqs []Request) []*Response {
	e.T.Helper()
	out := make([]*Response, len(reqs))
	errList := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errList[i] = e.Send(req)
		}()
	}
	wg.Wait()
	for _, err := range errList {
		if err != nil {
			e.T.Fatal(err)
		}
	}
	return out
}

// Send performs req against the server and returns a transport error rather
// than failing the test, so any goroutine may call it.
func (e *Env) Send(req Request) (*Response, error) {
	var body io.Reader
	switch b := req.Body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(j)
	}
	r, err := http.NewRequest(req.Method, e.URL+req.Path, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range req.Header {
		r.Header[k] = vs
	}
	if req.Token != "" {
		r.Header.Set("Authorization", "Bearer "+req.Token)
	}
	if _, given := req.Header["Content-Type"]; body != nil && !given {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.Server.Client().Do(r)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// Get is a shorthand for an authenticated GET.
func (e *Env) Get(path, token string) *Response {
	e.T.Helper()
	return e.Do(Request{Method: "GET", Path: path, Token: token})
}

// Expect fails the test unless r has status want.
func (r *Response) Expect(t testing.TB, want int) *Response {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d; body %s", r.Status, want, r.Body)
	}
	return r
}
