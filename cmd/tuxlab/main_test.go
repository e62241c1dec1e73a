package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tuxlab/internal/apitest"
	"tuxlab/internal/app"
	"tuxlab/internal/auth"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/docker"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// testEnv is a configuration for one engine with its own data directory.
func testEnv(t *testing.T, eng store.Engine) map[string]string {
	dsn, path := storetest.URL(t, eng)
	if dsn == "" {
		dsn = "sqlite:" + path
	}
	return map[string]string{
		"TUXLAB_DATA_DIR": filepath.Join(t.TempDir(), "data"),
		"DATABASE_URL":    dsn,
		"TUXLAB_ADDR":     "127.0.0.1:0",
		// No warm sandboxes: these tests are about the commands.
		"TUXLAB_SANDBOX_POOL_SIZE": "0",
	}
}

func runCmd(t *testing.T, env map[string]string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), err
}

func TestVersionAndUsage(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"version", "--version"} {
		// The release the server reports in /healthz and the OpenAPI document.
		if out, _, err := runCmd(t, nil, "", arg); err != nil || out != "tuxlab "+app.Version+"\n" {
			t.Fatalf("%s: %q %v, want tuxlab %s", arg, out, err, app.Version)
		}
	}
	if _, _, err := runCmd(t, nil, "", "frobnicate"); err == nil {
		t.Fatal("unknown command accepted")
	}
}

func TestMigrateAndCreateUser(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			env := testEnv(t, eng)
			if out, _, err := runCmd(t, env, "", "migrate"); err != nil || !strings.Contains(out, "up to date") {
				t.Fatalf("migrate: %q %v", out, err)
			}
			out, _, err := runCmd(t, env, "S3cret-admin-pw\n", "user", "create", "--username", "root", "--email", "root@tuxlab.org", "--role", "admin")
			if err != nil || !strings.Contains(out, `created admin "root"`) {
				t.Fatalf("user create: %q %v", out, err)
			}
			// The real program hashes at the production cost (tests of the API lower it).
			db, err := store.Open(context.Background(), strings.TrimPrefix(env["DATABASE_URL"], "sqlite:"), strings.TrimPrefix(env["DATABASE_URL"], "sqlite:"))
			if err != nil {
				t.Fatal(err)
			}
			var hash string
			err = db.SQL().QueryRowContext(context.Background(), `SELECT password_hash FROM users WHERE username = 'root'`).Scan(&hash)
			db.Close()
			if cost, cerr := bcrypt.Cost([]byte(hash)); err != nil || cerr != nil || cost != auth.BcryptCost {
				t.Fatalf("hash cost %d (%v %v), want %d", cost, err, cerr, auth.BcryptCost)
			}
			if _, _, err := runCmd(t, env, "S3cret-admin-pw\n", "user", "create", "--username", "root", "--email", "r2@tuxlab.org", "--role", "admin"); err == nil || !strings.Contains(err.Error(), "Username already registered") {
				t.Fatalf("duplicate: %v", err)
			}
			if _, _, err := runCmd(t, env, "short\n", "user", "create", "--username", "kim", "--email", "kim@tuxlab.org", "--role", "student"); err == nil || !strings.Contains(err.Error(), "password: Password must be at least 8") {
				t.Fatalf("weak password: %v", err)
			}
			if _, _, err := runCmd(t, env, "", "user", "create", "--username", "kim", "--email", "kim@tuxlab.org"); err == nil || !strings.Contains(err.Error(), "stdin") {
				t.Fatalf("no password: %v", err)
			}
			if _, _, err := runCmd(t, env, "x\n", "user", "create", "--username", "kim", "--email", "kim@tuxlab.org", "--role", "god"); err == nil {
				t.Fatal("bad role accepted")
			}
		})
	}
}

func TestProductionRefusesWeakSecret(t *testing.T) {
	t.Parallel()
	env := testEnv(t, store.SQLite)
	env["TUXLAB_ENV"] = "production"
	env["SECRET_KEY"] = "too-short"
	if _, _, err := runCmd(t, env, "", "serve"); err == nil || !strings.Contains(err.Error(), "SECRET_KEY") {
		t.Fatalf("serve: %v", err)
	}
}

// TestProductionServeNeedsMetricsToken: serve refuses production without
// the metrics token, and says what to set.
func TestProductionServeNeedsMetricsToken(t *testing.T) {
	t.Parallel()
	env := testEnv(t, store.SQLite)
	env["TUXLAB_ENV"] = "production"
	env["SECRET_KEY"] = strings.Repeat("k", 32)
	if _, _, err := runCmd(t, env, "", "serve"); err == nil || !strings.Contains(err.Error(), "TUXLAB_METRICS_TOKEN") {
		t.Fatalf("serve: %v", err)
	}
}

// TestServeShutsDownGracefully starts the real server on port 0, begins a
// request, sends the shutdown signal (cancels the context) while the request
// body is still arriving, and checks that the request still completes.
func TestServeShutsDownGracefully(t *testing.T) {
	t.Parallel()
	env := testEnv(t, store.SQLite)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A generous grace: the in-flight registration hashes at production cost,
	// which takes long under the race detector on a busy machine.
	srv := startServe(ctx, env, "--shutdown-grace", "2m")
	// Without TUXLAB_SMTP_URL the start says that password reset is off.
	waitForLog(t, srv.log, "password reset off: no TUXLAB_SMTP_URL, so /api/auth/forgot-password and /api/auth/reset-password answer 503 (docs/accounts.md)")
	addr := waitForLog(t, srv.log, "serving").Addr
	shuttingDown := make(chan struct{})
	go func() {
		waitForLog(t, srv.log, "shutting down: waiting for in-flight requests")
		close(shuttingDown)
		srv.drain()
	}()

	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	// Expect: 100-continue makes the server say when a handler is reading the
	// body, so the request is provably in flight when shutdown begins.
	bodyR, bodyW := io.Pipe()
	reading := make(chan struct{})
	respc := make(chan *http.Response, 1)
	go func() {
		trace := &httptrace.ClientTrace{Got100Continue: func() { close(reading) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
			"POST", "http://"+addr+"/api/auth/register", bodyR)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Expect", "100-continue")
		client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("in-flight request failed: %v", err)
			respc <- nil
			return
		}
		respc <- resp
	}()
	<-reading
	cancel() // SIGTERM
	<-shuttingDown
	bodyW.Write([]byte(`{"username":"late","email":"late@tuxlab.org","password":"finished after shutdown began"}`))
	bodyW.Close()
	if resp := <-respc; resp == nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("in-flight request: %+v", resp)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Fatal("a new request was served after shutdown")
	}
	select {
	case err := <-srv.done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after shutdown")
	}
}

// serving is `tuxlab serve` run in the background by a test: its log, to
// read line by line, and what run returned.
type serving struct {
	log  *bufio.Scanner
	done chan error
}

// startServe runs `tuxlab serve args...` with env until ctx ends.
func startServe(ctx context.Context, env map[string]string, args ...string) *serving {
	logR, logW := io.Pipe()
	s := &serving{log: bufio.NewScanner(logR), done: make(chan error, 1)}
	go func() {
		s.done <- run(ctx, append([]string{"serve"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, logW)
		logW.Close()
	}()
	return s
}

// drain reads the rest of the log, so that serve never waits to write it.
func (s *serving) drain() {
	for s.log.Scan() {
	}
}

// logLine is the part of a JSON log line the test reads.
type logLine struct{ Msg, Addr string }

// waitForLog reads log lines until one has message msg.
func waitForLog(t *testing.T, sc *bufio.Scanner, msg string) logLine {
	for sc.Scan() {
		var line logLine
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == msg {
			return line
		}
	}
	t.Errorf("server never logged %q: %v", msg, sc.Err())
	return logLine{}
}

func TestContentImportExport(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			env := testEnv(t, eng)
			src := filepath.Join("..", "..", "content", "curriculum")
			out, errOut, err := runCmd(t, env, "", "content", "import", src)
			if err != nil || !strings.Contains(out, "created") || !strings.Contains(errOut, "rendered") {
				t.Fatalf("import: %q %q %v", out, errOut, err)
			}
			out, _, err = runCmd(t, env, "", "content", "import", src)
			if err != nil || !unchanged(out) {
				t.Fatalf("second import: %q %v", out, err)
			}
			dir := filepath.Join(t.TempDir(), "export")
			if out, _, err = runCmd(t, env, "", "content", "export", dir); err != nil || !strings.Contains(out, "exported") {
				t.Fatalf("export: %q %v", out, err)
			}
			if _, _, err = runCmd(t, env, "", "content", "export", dir); err == nil {
				t.Fatal("export into a non-empty directory was accepted")
			}
			// The export reads back as the same curriculum: importing it changes nothing.
			out, _, err = runCmd(t, env, "", "content", "import", dir)
			if err != nil || !unchanged(out) {
				t.Fatalf("import of the export: %q %v", out, err)
			}
			if _, _, err := runCmd(t, env, "", "content", "import", filepath.Join(t.TempDir(), "missing")); err == nil {
				t.Fatal("import of a missing directory was accepted")
			}
		})
	}
}

// unchanged reports whether an import's report says it changed nothing.
func unchanged(report string) bool {
	for _, what := range []string{"modules", "themes", "laboratories", "exams"} {
		if !strings.Contains(report, what+": 0 created, 0 updated") {
			return false
		}
	}
	return true
}

// A curriculum with a laboratory in its module's directory and an exam.
var labExamFixture = map[string]string{
	"01-shell/module.md": "---\nslug: shell\ntitle: The shell\norder: 1\n---\nFirst steps.\n",
	"01-shell/01-pwd.md": "---\nslug: shell-pwd\ntitle: Where am I\norder: 1\nestimated_minutes: 5\n---\n# pwd\n",
	"01-shell/lab.yaml": `slug: shell-lab
title: "Lab: the shell"
description: |
  Make a directory.
template: BusyBox
time_limit_minutes: 20
setup: |
  #!/bin/sh
  mkdir -p /srv/data
solution: |
  mkdir -p ~/work
tasks:
  - title: Make ~/work
    hint: mkdir
    points: 2
    check: |
      #!/bin/sh
      [ -d /home/learner/work ] || { echo "FAIL: no ~/work"; exit 1; }
  - title: Nothing to do
    check: "true"
`,
	"exams/01-basics.yaml": `slug: basics
title: Basics
description: A short exam.
module: shell
time_limit_minutes: 10
passing_score: 50
max_attempts: 2
template: BusyBox
questions:
  - kind: single_choice
    prompt: Where am I?
    options: [ls, pwd]
    answer: 1
    explanation: It prints the working directory.
  - kind: multiple_choice
    prompt: Which list files?
    options: [ls, pwd, find]
    answers: [0, 2]
  - kind: short_text
    prompt: The command that prints the working directory?
    accept: [pwd]
  - kind: practical
    prompt: Make ~/work.
    check: "[ -d /home/learner/work ]"
    solution: mkdir -p ~/work
`,
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestContentImportExportLabsAndExams(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			env := testEnv(t, eng)
			// A misspelt key, or a bad answer index, is refused before anything is written.
			for name, bad := range map[string]string{
				"01-shell/lab.yaml":    strings.Replace(labExamFixture["01-shell/lab.yaml"], "hint:", "hnit:", 1),
				"exams/01-basics.yaml": strings.Replace(labExamFixture["exams/01-basics.yaml"], "answer: 1", "answer: 5", 1),
			} {
				files := maps.Clone(labExamFixture)
				files[name] = bad
				_, errOut, err := runCmd(t, env, "", "content", "import", writeTree(t, files))
				if err == nil || !strings.Contains(errOut+err.Error(), name) {
					t.Fatalf("bad %s accepted: %q %v", name, errOut, err)
				}
			}
			src := writeTree(t, labExamFixture)
			out, _, err := runCmd(t, env, "", "content", "import", src)
			if err != nil || !strings.Contains(out, "laboratories: 1 created") || !strings.Contains(out, "exams: 1 created") || !strings.Contains(out, "modules: 1 created") {
				t.Fatalf("import: %q %v", out, err)
			}
			if out, _, err = runCmd(t, env, "", "content", "import", src); err != nil || !unchanged(out) {
				t.Fatalf("second import: %q %v", out, err)
			}
			// An edited file updates in place.
			edited := maps.Clone(labExamFixture)
			edited["01-shell/lab.yaml"] = strings.Replace(edited["01-shell/lab.yaml"], "hint: mkdir", "hint: mkdir -p", 1)
			if out, _, err = runCmd(t, env, "", "content", "import", writeTree(t, edited)); err != nil || !strings.Contains(out, "laboratories: 0 created, 1 updated") {
				t.Fatalf("edited import: %q %v", out, err)
			}
			// Export, and the export imports back unchanged and exports the same files.
			dir := filepath.Join(t.TempDir(), "export")
			if out, _, err = runCmd(t, env, "", "content", "export", dir); err != nil || !strings.Contains(out, "1 laboratories and 1 exams") {
				t.Fatalf("export: %q %v", out, err)
			}
			for _, f := range []string{"01-shell/lab.yaml", "exams/01-basics.yaml"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Fatalf("export lacks %s: %v", f, err)
				}
			}
			if out, _, err = runCmd(t, env, "", "content", "import", dir); err != nil || !unchanged(out) {
				t.Fatalf("import of the export: %q %v", out, err)
			}
			fresh := testEnv(t, eng)
			if out, _, err = runCmd(t, fresh, "", "content", "import", dir); err != nil {
				t.Fatalf("import into a fresh database: %q %v", out, err)
			}
			again := filepath.Join(t.TempDir(), "again")
			if _, _, err = runCmd(t, fresh, "", "content", "export", again); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"01-shell/lab.yaml", "exams/01-basics.yaml"} {
				a, _ := os.ReadFile(filepath.Join(dir, f))
				b, _ := os.ReadFile(filepath.Join(again, f))
				if string(a) != string(b) || len(a) == 0 {
					t.Fatalf("%s differs after a round trip:\n%s\n---\n%s", f, a, b)
				}
			}
		})
	}
}

// TestContentImportExportKeepsOwners imports content that names an owner and
// drafts, exports it, and imports the export into a database with the same
// user: owners and drafts survive, and the files come back byte for byte.
func TestContentImportExportKeepsOwners(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			files := maps.Clone(labExamFixture)
			files["01-shell/module.md"] = "---\nslug: shell\ntitle: The shell\norder: 1\nowner: teach\npublished: false\n---\nFirst steps.\n"
			files["01-shell/01-pwd.md"] = "---\nslug: shell-pwd\ntitle: Where am I\norder: 1\nestimated_minutes: 5\nowner: teach\n---\n# pwd\n"
			files["01-shell/lab.yaml"] = strings.Replace(files["01-shell/lab.yaml"], "title: \"Lab: the shell\"\n", "title: \"Lab: the shell\"\nowner: teach\npublished: false\n", 1)
			files["exams/01-basics.yaml"] = strings.Replace(files["exams/01-basics.yaml"], "title: Basics\n", "title: Basics\nowner: teach\n", 1)
			src := writeTree(t, files)
			env := testEnv(t, eng)
			// The owner must exist: an unknown username is refused, naming it.
			if _, errOut, err := runCmd(t, env, "", "content", "import", src); err == nil || !strings.Contains(errOut+err.Error(), `"teach"`) {
				t.Fatalf("import with an unknown owner: %q %v", errOut, err)
			}
			teacher := func(env map[string]string) {
				if _, errOut, err := runCmd(t, env, "S3cret-teach-pw\n", "user", "create", "--username", "teach", "--email", "teach@tuxlab.org", "--role", "instructor"); err != nil {
					t.Fatalf("user create: %q %v", errOut, err)
				}
			}
			teacher(env)
			if out, _, err := runCmd(t, env, "", "content", "import", src); err != nil || !strings.Contains(out, "laboratories: 1 created") {
				t.Fatalf("import: %q %v", out, err)
			}
			if out, _, err := runCmd(t, env, "", "content", "import", src); err != nil || !unchanged(out) {
				t.Fatalf("second import: %q %v", out, err)
			}
			dir := filepath.Join(t.TempDir(), "export")
			if _, _, err := runCmd(t, env, "", "content", "export", dir); err != nil {
				t.Fatal(err)
			}
			fresh := testEnv(t, eng)
			teacher(fresh)
			if out, _, err := runCmd(t, fresh, "", "content", "import", dir); err != nil {
				t.Fatalf("import into a fresh database: %q %v", out, err)
			}
			again := filepath.Join(t.TempDir(), "again")
			if _, _, err := runCmd(t, fresh, "", "content", "export", again); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ file, want string }{
				{"01-shell/module.md", "owner: teach\npublished: false\n"},
				{"01-shell/01-pwd.md", "owner: teach\n---"},
				{"01-shell/lab.yaml", "owner: teach\npublished: false\n"},
				{"exams/01-basics.yaml", "owner: teach\n"},
			} {
				a, _ := os.ReadFile(filepath.Join(dir, c.file))
				b, _ := os.ReadFile(filepath.Join(again, c.file))
				if string(a) != string(b) || !strings.Contains(string(a), c.want) {
					t.Errorf("%s after a round trip, want %q in it:\n%s\n---\n%s", c.file, c.want, a, b)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "exams/01-basics.yaml")); strings.Contains(string(b), "published") {
				t.Errorf("a published exam's file says so: it should leave it out:\n%s", b)
			}
		})
	}
}

// TestDebugListener checks that TUXLAB_DEBUG_ADDR serves the profiles on its
// own address and that the API address never does.
func TestDebugListener(t *testing.T) {
	env := testEnv(t, store.SQLite)
	env["TUXLAB_DEBUG_ADDR"] = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	srv := startServe(ctx, env)
	debugAddr := waitForLog(t, srv.log, "serving profiles").Addr
	addr := waitForLog(t, srv.log, "serving").Addr
	go srv.drain()
	for _, c := range []struct {
		url    string
		status int
	}{
		{"http://" + debugAddr + "/debug/pprof/", http.StatusOK},
		{"http://" + debugAddr + "/debug/pprof/heap?debug=1", http.StatusOK},
		{"http://" + addr + "/debug/pprof/", http.StatusNotFound},
	} {
		resp, err := http.Get(c.url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("GET %s: %d, want %d", c.url, resp.StatusCode, c.status)
		}
	}
	cancel()
	if err := <-srv.done; err != nil {
		t.Fatalf("serve returned %v", err)
	}
}

// TestServeRemovesItsWarmPool serves with a warm pool on the real engine,
// waits for the pool to hold a sandbox, stops the server, and checks that
// when serve has returned the engine holds no container of the install: the
// pool is removed before the process may exit.
func TestServeRemovesItsWarmPool(t *testing.T) {
	t.Parallel()
	rt := apitest.RequireEngine(t)
	env := testEnv(t, store.SQLite)
	env["TUXLAB_SANDBOX_POOL_SIZE"] = "1"
	env["DOCKER_HOST"] = os.Getenv("DOCKER_HOST")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := startServe(ctx, env)
	waitForLog(t, srv.log, "serving")
	go srv.drain()
	instance := setting(t, env, "sandbox_instance_id")
	mine := map[string]string{sandbox.LabelManaged: "true", sandbox.LabelInstance: instance}
	t.Cleanup(func() { removeAll(rt, mine) })
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, err := rt.List(context.Background(), mine)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the warm pool never held a sandbox")
		}
		time.Sleep(200 * time.Millisecond)
	}
	cancel() // SIGTERM
	if err := <-srv.done; err != nil {
		t.Fatalf("serve returned %v", err)
	}
	if list, err := rt.List(context.Background(), mine); err != nil || len(list) != 0 {
		t.Fatalf("containers left on the engine after serve returned: %+v %v", list, err)
	}
}

// setting reads an install-wide setting from env's database.
func setting(t *testing.T, env map[string]string, key string) string {
	t.Helper()
	dsn := env["DATABASE_URL"]
	db, err := store.Open(context.Background(), dsn, strings.TrimPrefix(dsn, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v, err := db.Sandboxes().Setting(context.Background(), key)
	if err != nil || v == "" {
		t.Fatalf("setting %s: %q %v", key, v, err)
	}
	return v
}

// removeAll removes the engine containers with labels, so a failed test
// leaks nothing.
func removeAll(rt *docker.Runtime, labels map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, _ := rt.List(ctx, labels)
	for _, in := range list {
		rt.Remove(ctx, in.EngineID)
	}
}

// TestAdminCommandsNeitherSeedNorAskTheEngine runs user create, content
// export and migrate against an "engine" that records every connection: none
// is made, and the database gains no template, module or laboratory.
func TestAdminCommandsNeitherSeedNorAskTheEngine(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var dialled atomic.Int32
			go func() {
				for {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					dialled.Add(1)
					conn.Close()
				}
			}()
			env := testEnv(t, eng)
			env["DOCKER_HOST"] = "tcp://" + ln.Addr().String()
			env["TUXLAB_BUNDLED_CURRICULUM"] = "true"
			env["TUXLAB_BOOTSTRAP_ADMIN"] = "boot:boot@tuxlab.org"
			env["TUXLAB_BOOTSTRAP_ADMIN_PASSWORD"] = "Bootstrap-pass-1"
			if _, errOut, err := runCmd(t, env, "S3cret-admin-pw\n", "user", "create", "--username", "root", "--email", "root@tuxlab.org", "--role", "admin"); err != nil {
				t.Fatalf("user create: %v %s", err, errOut)
			} else if strings.Contains(errOut, "container engine") {
				t.Fatalf("user create spoke of the engine: %s", errOut)
			}
			if _, errOut, err := runCmd(t, env, "", "content", "export", filepath.Join(t.TempDir(), "export")); err != nil {
				t.Fatalf("content export: %v %s", err, errOut)
			}
			if _, errOut, err := runCmd(t, env, "", "migrate"); err != nil {
				t.Fatalf("migrate: %v %s", err, errOut)
			}
			if n := dialled.Load(); n != 0 {
				t.Fatalf("the commands connected to the engine %d times", n)
			}
			dsn := env["DATABASE_URL"]
			db, err := store.Open(context.Background(), dsn, strings.TrimPrefix(dsn, "sqlite:"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, table := range []string{"sandbox_templates", "modules", "labs", "exams"} {
				var n int
				if err := db.SQL().QueryRowContext(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != 0 {
					t.Errorf("%s: %d rows (%v), want none", table, n, err)
				}
			}
			var users int
			if err := db.SQL().QueryRowContext(context.Background(), "SELECT count(*) FROM users").Scan(&users); err != nil || users != 1 {
				t.Errorf("users: %d (%v), want only the one created", users, err)
			}
		})
	}
}
