// Package app wires tuxlab together: it is the one place that knows every
// package, so the others can depend only on what they need.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tuxlab/content"
	"tuxlab/internal/auth"
	"tuxlab/internal/class"
	"tuxlab/internal/config"
	"tuxlab/internal/dashboard"
	"tuxlab/internal/exam"
	"tuxlab/internal/httpapi"
	"tuxlab/internal/lab"
	"tuxlab/internal/lesson"
	"tuxlab/internal/mail"
	"tuxlab/internal/metrics"
	"tuxlab/internal/profile"
	"tuxlab/internal/recording"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/docker"
	"tuxlab/internal/sandbox/kube"
	"tuxlab/internal/sandbox/qemu"
	"tuxlab/internal/share"
	"tuxlab/internal/store"
	"tuxlab/internal/terminal"
	"tuxlab/internal/web"
)

// Version is tuxlab's release, set at build time with -ldflags "-X tuxlab/internal/app.Version=...".
var Version = "0.4.0"

// App is a configured tuxlab: its store, domain services and HTTP server.
type App struct {
	Config    config.Config
	Log       *slog.Logger
	DB        *store.DB
	Auth      *auth.Service
	Lessons   *lesson.Service
	Sandboxes *sandbox.Service
	Terminals *terminal.Bridge
	Labs      *lab.Service
	Exams     *exam.Service
	Profiles  *profile.Service
	Dashboard *dashboard.Dashboard
	Classes   *class.Service
	// Recordings are the terminals' recordings (docs/terminal.md, "Recordings").
	Recordings *recording.Service
	Server     *httpapi.Server
	// Mail is the mail queue; its worker runs in Background. Resets is
	// password reset by mail, off without TUXLAB_SMTP_URL.
	Mail   *mail.Queue
	Resets *auth.Resets
	// Verifications is e-mail verification on registration, nil unless
	// TUXLAB_REQUIRE_EMAIL_VERIFICATION is on.
	Verifications *auth.Verifications

	engine *docker.Runtime // the engine client, closed last (nil: no engine configured)
	kube   *kube.Runtime   // the Kubernetes driver (TUXLAB_SANDBOX_ENGINE=kubernetes), else nil
	// machines is the machine driver (nil: no QEMU here, or TUXLAB_MACHINES=off).
	machines *qemu.Runtime
	metrics  *metrics.Metrics // the domains' collectors, on /metrics
	// holder names this process in the leases table (host name and a random
	// suffix, new at every start).
	holder  string
	leading atomic.Bool // whether this process held the sandbox lease at its last round
}

// Open connects to the database and applies pending migrations.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (*store.DB, error) {
	db, err := store.Open(ctx, cfg.DatabaseURL, cfg.SQLitePath())
	if err != nil {
		return nil, fmt.Errorf("%w (check DATABASE_URL, or unset it to use SQLite in %s)", err, cfg.DataDir)
	}
	if _, err := db.Migrate(ctx, log); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// New builds an App on an open, migrated store. It only wires: it seeds
// nothing, asks nothing of the container engine and starts no background
// work, so the administration commands (user create, content import and
// export) use it as they are. A server calls Start, then Serve; every App
// ends with Close.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, db *store.DB) (*App, error) {
	a := &App{Config: cfg, Log: log, DB: db, metrics: metrics.New(), holder: newHolder()}
	if cfg.Now != nil {
		db.Now = cfg.Now
	}
	// Terminals first: the auth domain ends a user's terminals when the
	// user's access ends.
	if err := a.openSandboxes(ctx); err != nil {
		return nil, err
	}
	a.Recordings = recording.NewService(db.Recordings(), recording.Options{MaxBytes: cfg.RecordingMaxBytes, Retention: cfg.RecordingRetention, Now: cfg.Now, Log: log})
	a.Terminals = terminal.NewBridge(a.Sandboxes, terminal.Options{IdleTimeout: cfg.TerminalIdleTimeout, MaxPerSandbox: cfg.TerminalsPerSandbox, Grace: cfg.TerminalGrace,
		PingInterval: cfg.TerminalPingInterval, Describe: httpapi.Describe, Log: a.Log,
		Recordings: a.Recordings, RecordFlush: cfg.RecordingFlush, RecordMaxBytes: a.Recordings.MaxBytes()})
	a.Auth = auth.NewService(db.Users(), auth.Options{
		Sessions:           a.Terminals,
		Secret:             []byte(cfg.SecretKey),
		TokenTTL:           cfg.TokenTTL,
		AuthPerIPPerMinute: cfg.AuthPerIPPerMinute,
		LoginPerUserPerMin: cfg.LoginPerUserPerMin,
		BcryptWorkers:      cfg.BcryptWorkers,
		BcryptCost:         cfg.BcryptCost,
		LimitsNow:          cfg.RateLimitNow,
		MFA:                db.MFA(),
		TOTPNow:            cfg.TOTPNow,
	})
	if err := a.openMail(); err != nil {
		return nil, err
	}
	a.Lessons = lesson.NewService(db.Lessons(), db.Activity(), cfg.Now)
	a.Labs = lab.NewService(db.Labs(), a.metrics.Checks(a.Sandboxes, metrics.KindLab), lab.Options{CheckInterval: cfg.LabCheckInterval, CheckTimeout: cfg.CheckTimeout,
		CheckBudget: cfg.LabCheckBudget, AttemptsPerDay: cfg.LabAttemptsPerDay, Log: log, Activity: db.Activity(), Now: cfg.Now})
	a.Exams = exam.NewService(db.Exams(), a.metrics.Checks(a.Sandboxes, metrics.KindExam), exam.Options{CheckTimeout: cfg.CheckTimeout, Log: log, Activity: db.Activity(), Now: cfg.Now})
	a.Profiles = profile.NewService(db.Profiles(), a.Auth, db.Activity(), profile.NewDirStorage(cfg.DataDir), profile.Options{
		Log: log, Decoders: cfg.AvatarDecoders, DecodeTimeout: cfg.AvatarDecodeTimeout, Normalize: cfg.AvatarNormalize})
	a.Classes = class.NewService(db.Classes(), a.Lessons, class.Options{Now: cfg.Now, LimitsNow: cfg.RateLimitNow})
	a.Server = httpapi.New(httpapi.Deps{
		Auth: a.Auth, Lessons: a.Lessons, Sandboxes: a.Sandboxes, Terminals: a.Terminals, Labs: a.Labs, Exams: a.Exams, Profiles: a.Profiles,
		Dashboard: dashboard.NewDashboard(db.Activity(), a.Lessons, cfg.Now), Classes: a.Classes, Shares: share.NewService(db.Shares(), cfg.Now), Recordings: a.Recordings, DB: db, Log: log, Version: Version,
		CORSOrigins: cfg.CORSOrigins, MaxBodyBytes: cfg.MaxBodyBytes, TrustedProxies: cfg.TrustedProxies, MetricsToken: string(cfg.MetricsToken), SecureCookies: cfg.Env == config.Production, AccessLogLevel: slog.LevelInfo,
		UI: web.New(), Resets: a.Resets, Verifications: a.Verifications,
	})
	a.registerMetrics()
	return a, nil
}

// Start does what a serving process does once before it serves: it listens
// for changes to users made by other processes (PostgreSQL), seeds the
// default sandbox templates, the first admin (TUXLAB_BOOTSTRAP_ADMIN) and the
// bundled curriculum, and asks the container engine whether it answers; when
// it does, it reconciles the engine with the database at once, which removes
// what a dead process of this install left behind (its warm pool included).
// ctx bounds the start only: nothing Start begins outlives Close.
func (a *App) Start(ctx context.Context) error {
	a.DB.ListenUsers(ctx, a.Config.DatabaseURL, a.Log)
	if a.Resets.Enabled() {
		a.Log.Info("password reset by mail on", "smtp", a.Config.LogAttrsSMTP(), "public_url", a.Config.PublicURL)
	} else {
		a.Log.Info("password reset off: no TUXLAB_SMTP_URL, so /api/auth/forgot-password and /api/auth/reset-password answer 503 (docs/accounts.md)")
	}
	if a.Verifications != nil {
		a.Log.Info("e-mail verification on registration required (TUXLAB_REQUIRE_EMAIL_VERIFICATION): new accounts sign in once they open the link mailed to them")
	}
	if err := a.Sandboxes.EnsureDefaultTemplates(ctx); err != nil {
		return fmt.Errorf("seed sandbox templates: %w", err)
	}
	if a.Config.BootstrapAdmin != "" {
		username, email, _ := strings.Cut(a.Config.BootstrapAdmin, ":")
		created, err := a.Auth.EnsureAdmin(ctx, auth.NewUser{Username: username, Email: email, Password: string(a.Config.BootstrapAdminPassword)})
		if err != nil {
			return fmt.Errorf("TUXLAB_BOOTSTRAP_ADMIN: %w", err)
		}
		if created {
			a.Log.Info("created the first admin from TUXLAB_BOOTSTRAP_ADMIN", "username", username)
		}
	}
	if a.Config.BundledCurriculum {
		if err := a.loadBundled(ctx); err != nil {
			return fmt.Errorf("load the bundled curriculum: %w", err)
		}
	}
	a.startMachines(ctx)
	if a.kube != nil {
		return a.startKube(ctx)
	}
	if a.engine == nil {
		return nil
	}
	a.useLXCFS()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := a.engine.Ping(pctx); err != nil {
		a.Log.Warn("no container engine answers: sandbox routes answer 503 until one does (install docker.io and start it, or set DOCKER_HOST)", "error", err.Error())
		return nil
	}
	if err := a.Sandboxes.Reconcile(ctx); err != nil {
		a.Log.Warn("sandbox reconciliation at start", "error", err.Error())
	}
	return nil
}

// startKube asks the Kubernetes API server whether it answers and, when it
// does, reconciles the sandbox pods with the database.
func (a *App) startKube(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := a.kube.Ping(pctx); err != nil {
		a.Log.Warn("the Kubernetes API server does not answer: sandbox routes answer 503 until it does (check KUBECONFIG)", "error", err.Error())
		return nil
	}
	a.Log.Info("sandboxes run as pods on Kubernetes", "namespace", a.kube.Namespace())
	if err := a.Sandboxes.Reconcile(ctx); err != nil {
		a.Log.Warn("sandbox reconciliation at start", "error", err.Error())
	}
	return nil
}

// startMachines says whether machines can be made here, and reconciles
// them with the database when containers cannot be (Reconcile covers both).
func (a *App) startMachines(ctx context.Context) {
	if a.machines == nil {
		return
	}
	if err := a.Sandboxes.MachinesAvailable(ctx); err != nil {
		a.Log.Warn("machines unavailable: machine templates answer 503", "error", err.Error())
		return
	}
	if ok, _ := a.machines.ImageExists(ctx, "current"); !ok {
		a.Log.Warn("no machine image: machine templates answer 503 until an operator runs ./scripts/build-machine-image.sh", "dir", a.Config.MachineImageDir)
	}
	if a.engine == nil {
		if err := a.Sandboxes.Reconcile(ctx); err != nil {
			a.Log.Warn("sandbox reconciliation at start", "error", err.Error())
		}
	}
}

// useLXCFS has the engine bind LXCFS's files into new sandboxes, so they
// see their own memory, CPUs and load (TUXLAB_SANDBOX_LXCFS=auto),
// and says once which it is.
func (a *App) useLXCFS() {
	switch {
	case a.Config.SandboxLXCFS == "off":
		a.Log.Info("LXCFS off (TUXLAB_SANDBOX_LXCFS=off): sandboxes see the host's memory, CPUs and load")
	case !a.engine.IsLocal():
		a.Log.Info("LXCFS not used: the engine runs on another machine (DOCKER_HOST), so it cannot bind this machine's LXCFS files; sandboxes see the host's memory, CPUs and load")
	default:
		if err := a.engine.UseLXCFS(docker.LXCFSDir, a.Log.Warn); err != nil {
			a.Log.Warn("LXCFS not used: sandboxes see the host's memory, CPUs and load (scripts/ensure-engine.sh installs and starts lxcfs; docs/sandboxes.md)", "error", err.Error())
			return
		}
		a.Log.Info("LXCFS: sandboxes see their own memory, CPUs and load", "dir", docker.LXCFSDir, "files", a.engine.LXCFS())
	}
}

// loadBundled loads the embedded curriculum into a database that has none of
// it: lessons into one without modules, laboratories and exams into one
// without any, so an install that predates them gains them on upgrade.
func (a *App) loadBundled(ctx context.Context) error {
	fsys := content.Curriculum()
	imported, report, err := a.Lessons.ImportIfEmpty(ctx, fsys)
	if err != nil {
		return err
	}
	if imported {
		a.Log.Info("loaded the bundled curriculum into an empty database", "report", report.String())
	}
	if labs, err := a.Labs.Labs(ctx); err != nil {
		return err
	} else if len(labs) == 0 {
		files, err := lab.ReadFiles(fsys)
		if err != nil {
			return err
		}
		r, err := a.Labs.Import(ctx, files)
		if err != nil {
			return err
		}
		a.Log.Info("loaded the bundled laboratories", "report", r.String())
	}
	if exams, err := a.Exams.Exams(ctx); err != nil {
		return err
	} else if len(exams) == 0 {
		files, err := exam.ReadFiles(fsys)
		if err != nil {
			return err
		}
		r, err := a.Exams.Import(ctx, files)
		if err != nil {
			return err
		}
		a.Log.Info("loaded the bundled exams", "report", r.String())
	}
	return nil
}

// ImportContent upserts a curriculum directory by slug: modules and themes,
// then laboratories and exams. Every file is read and checked before anything
// is written, so a bad file changes nothing. Laboratories name their sandbox
// template, so a directory with laboratories first adds the default
// templates a database lacks (one that was never served has none).
func (a *App) ImportContent(ctx context.Context, fsys fs.FS, progress func(format string, args ...any)) ([]string, error) {
	labFiles, err := lab.ReadFiles(fsys)
	if err != nil {
		return nil, err
	}
	examFiles, err := exam.ReadFiles(fsys)
	if err != nil {
		return nil, err
	}
	if len(labFiles) > 0 {
		if err := a.Sandboxes.EnsureDefaultTemplates(ctx); err != nil {
			return nil, fmt.Errorf("the default sandbox templates: %w", err)
		}
	}
	lessons, err := a.Lessons.Import(ctx, fsys, progress)
	if err != nil {
		return nil, err
	}
	labs, err := a.Labs.Import(ctx, labFiles)
	if err != nil {
		return nil, err
	}
	exams, err := a.Exams.Import(ctx, examFiles)
	if err != nil {
		return nil, err
	}
	return []string{lessons.String(), labs.String(), exams.String()}, nil
}

// ExportContent writes the curriculum, laboratories and exams to dir.
func (a *App) ExportContent(ctx context.Context, dir string) (string, error) {
	themes, err := a.Lessons.Export(ctx, dir)
	if err != nil {
		return "", err
	}
	labs, err := a.Labs.Export(ctx, dir)
	if err != nil {
		return "", err
	}
	exams, err := a.Exams.Export(ctx, dir)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("exported %d themes, %d laboratories and %d exams to %s", themes, labs, exams, dir), nil
}

// registerMetrics exposes the state of sandboxes and terminals, and the
// domains' numbers (internal/metrics), on /metrics.
func (a *App) registerMetrics() {
	reg := a.Server.Registry()
	a.metrics.Register(reg)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tuxlab_sandboxes_running", Help: "Sandboxes running (or being created) on this install.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, err := a.DB.Sandboxes().CountRunning(ctx)
		if err != nil {
			return -1
		}
		return float64(n)
	}))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tuxlab_terminals_open", Help: "Terminal WebSockets open on this process.",
	}, func() float64 { return float64(a.Terminals.Open()) }))
	mailGauge := func(name, help string, pick func(waiting, failed int) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			waiting, failed, err := a.DB.Mail().CountMail(ctx)
			if err != nil {
				return -1
			}
			return float64(pick(waiting, failed))
		})
	}
	reg.MustRegister(
		mailGauge("tuxlab_mail_waiting", "Mail queued and not sent yet (due or waiting for a retry), every replica's.",
			func(w, _ int) int { return w }),
		mailGauge("tuxlab_mail_failed", "Mail given up: the server refused it for good or every attempt failed (docs/accounts.md).",
			func(_, f int) int { return f }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tuxlab_sandboxes_warm", Help: "Warm sandboxes ready to hand out in this process's pool.",
	}, func() float64 { return float64(a.Sandboxes.WarmTotal()) }))
}

// openMail sets up the mail queue and password reset on it: without
// TUXLAB_SMTP_URL the queue has no sender and reset is off.
func (a *App) openMail() error {
	cfg := a.Config
	o := mail.Options{From: cfg.MailFrom, Log: a.Log, Now: cfg.Now, Poll: cfg.MailPoll, RetryBase: cfg.MailRetryBase}
	if cfg.SMTPURL != "" {
		srv, err := mail.ParseServer(string(cfg.SMTPURL))
		if err != nil {
			return fmt.Errorf("TUXLAB_SMTP_URL: %w", err)
		}
		// EHLO names the site's host, as a mail server expects a name of the client's.
		hello := "localhost"
		if u, err := url.Parse(cfg.PublicURL); err == nil && u.Hostname() != "" {
			hello = u.Hostname()
		}
		o.Sender = &mail.SMTP{Server: srv, HelloName: hello}
	}
	a.Mail = mail.New(a.DB.Mail(), o)
	a.Resets = a.Auth.NewResets(auth.ResetOptions{Store: a.DB.Resets(), Mail: a.Mail, PublicURL: cfg.PublicURL, LimitsNow: cfg.RateLimitNow})
	if cfg.RequireEmailVerification {
		a.Verifications = a.Auth.NewVerifications(auth.VerifyOptions{Store: a.DB.Verifications(), Mail: a.Mail,
			PublicURL: cfg.PublicURL, LimitsNow: cfg.RateLimitNow})
	}
	return nil
}

// openSandboxes sets up the sandbox service on the configured engine's
// client, without asking the engine anything: a missing engine is not fatal,
// sandbox routes answer 503 until it appears.
func (a *App) openSandboxes(ctx context.Context) error {
	cfg := a.Config
	var rt sandbox.Runtime
	var noMachines error
	switch cfg.SandboxEngine {
	case "docker":
		d, err := docker.New(cfg.DockerHost)
		if err != nil {
			return fmt.Errorf("%w (check DOCKER_HOST)", err)
		}
		rt, a.engine = a.metrics.Runtime(d), d
	case "kubernetes":
		k, err := kube.New(kube.Options{Namespace: cfg.KubeNamespace, Kubeconfig: cfg.Kubeconfig, Log: a.Log, StorageClass: cfg.KubeStorageClass})
		if err != nil {
			return fmt.Errorf("%w (check KUBECONFIG, or run in a pod)", err)
		}
		rt, a.kube = a.metrics.Runtime(k), k
		// Machines need the QEMU driver on the host tuxlab runs on; on
		// Kubernetes they would be KubeVirt's (docs/kubernetes.md).
		noMachines = sandbox.ErrMachinesOnKubernetes
		a.Log.Info("machines off on Kubernetes: machine templates answer 503 (docs/kubernetes.md)")
	}
	var machines sandbox.Runtime
	if noMachines == nil {
		if a.machines = a.openMachines(); a.machines != nil {
			machines = a.metrics.Runtime(a.machines)
		}
	}
	var err error
	a.Sandboxes, err = sandbox.NewService(ctx, a.DB.Sandboxes(), rt, sandbox.Options{
		Machines: machines, NoMachines: noMachines, MachineLimits: sandbox.MachineLimits{MaxMemoryMB: cfg.MachineMaxMemoryMB}, BootTimeout: cfg.MachineBootTimeout,
		MaxPerUser: cfg.SandboxMaxPerUser, MaxRunningPerUser: cfg.SandboxMaxRunningPerUser, MaxRunningHost: cfg.SandboxMaxRunning,
		IdleTimeout: cfg.SandboxIdleTimeout, MaxLifetime: cfg.SandboxMaxLifetime, Log: a.Log, Activity: a.DB.Activity(), Now: cfg.Now,
		DiskMB: diskMB(cfg.SandboxDiskMB), DiskCheckInterval: cfg.SandboxDiskCheckInterval,
		PoolSize: cfg.SandboxPoolSize, PoolMaxAge: cfg.SandboxPoolMaxAge, ToolsImage: cfg.SandboxToolsImage,
		Observer: a.metrics, Lead: a.leadSandboxes,
	})
	if err != nil {
		a.closeEngine()
		return err
	}
	return nil
}

// openMachines returns the machine driver when machines are on
// (TUXLAB_MACHINES=auto) and QEMU is installed; otherwise nil, said once in
// the log: machine templates then answer 503 with what to install.
func (a *App) openMachines() *qemu.Runtime {
	cfg := a.Config
	if cfg.Machines == "off" {
		a.Log.Info("machines off (TUXLAB_MACHINES=off): machine templates answer 503")
		return nil
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		a.Log.Info("no QEMU here: machine templates answer 503 until an operator installs qemu-system-x86 and qemu-utils and builds the machine image (./scripts/build-machine-image.sh)")
		return nil
	}
	m, err := qemu.New(qemu.Options{ImageDir: cfg.MachineImageDir, StateDir: cfg.MachineStateDir, Accel: cfg.MachineAccel, Logger: a.Log})
	if err != nil {
		a.Log.Warn("machines unavailable: machine templates answer 503 (TUXLAB_MACHINE_STATE_DIR must be writable)", "error", err.Error())
		return nil
	}
	return m
}

// closeEngine closes the engine client, if there is one.
func (a *App) closeEngine() error {
	if a.engine == nil {
		return nil
	}
	err := a.engine.Close()
	a.engine = nil
	return err
}

// diskMB maps the setting (0: unbounded) to the service's option (negative: unbounded).
func diskMB(mb int) int {
	if mb == 0 {
		return -1
	}
	return mb
}

// Background runs the periodic work (sandbox lifecycle and reconciliation,
// the disk watch, the warm pool and its heartbeat, the mail queue's worker,
// the retention of terminal recordings)
// until ctx ends, and returns when it has stopped (the warm pool removed,
// the last mail's delivery recorded). Serve runs it; a caller that runs it
// itself must wait for it before Close.
func (a *App) Background(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { a.Mail.Run(ctx) })
	wg.Go(func() { a.Recordings.Run(ctx, cmp.Or(a.Config.RecordingPurgeInterval, time.Hour)) })
	if a.machines != nil {
		wg.Go(func() { a.machineAccel(ctx) })
	}
	a.Sandboxes.Run(ctx, a.Config.SandboxReconcileInterval)
	a.releaseLease(context.WithoutCancel(ctx), LeaseSandboxes)
	wg.Wait()
}

// machineAccel finds which accelerator machines get (the KVM canary takes
// up to 15 s where KVM does not really work), before a learner's first
// machine has to, and tells /readyz when it is software emulation.
func (a *App) machineAccel(ctx context.Context) {
	if ok, _ := a.machines.ImageExists(ctx, "current"); !ok {
		return
	}
	if a.machines.Accel(ctx, "current") == "tcg" {
		a.Sandboxes.SetMachineNote("Machines run under TCG, QEMU's software emulation, because KVM does not work on this host: " +
			"a machine takes about 20 s to boot cold instead of a few seconds (docs/machines.md)")
	}
	if a.Config.MachineWarm {
		a.WarmMachines(ctx)
	}
}

// WarmMachines has the machine driver save a booted state for each
// machine template that has none, one after the other (each takes a cold
// boot): machines of those templates then start in about two seconds
// instead of booting (docs/machines.md).
func (a *App) WarmMachines(ctx context.Context) {
	specs, err := a.Sandboxes.MachineWarmSpecs(ctx)
	if err != nil {
		a.Log.Warn("machines' warm start: cannot list the machine templates", "error", err.Error())
		return
	}
	for _, spec := range specs {
		if ctx.Err() != nil || a.machines.WarmReady(spec) {
			continue
		}
		a.Log.Info("machines' warm start: booting a machine once to save its state (a cold boot's time)", "image", spec.Image,
			"memory_mb", spec.MemoryBytes>>20, "disks", len(spec.ExtraDisksMB))
		began := time.Now()
		if err := a.machines.PrepareWarm(ctx, spec); err != nil {
			if ctx.Err() == nil {
				a.Log.Warn("machines' warm start: not prepared; machines boot cold", "error", err.Error())
			}
			continue
		}
		a.Log.Info("machines' warm start: ready", "took", time.Since(began).Round(time.Second))
	}
}

// Close ends the terminals still open (their processes killed; see
// terminal.Bridge.Shutdown, waiting at most a minute), then closes the
// database and, last, the engine client. The background work must have
// ended (Serve waits for it).
func (a *App) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	terr := a.Terminals.Shutdown(ctx)
	return errors.Join(terr, a.DB.Close(), a.closeEngine())
}

// Serve serves HTTP on ln and runs the background work until ctx ends, then
// shuts down in order: it stops accepting, lets in-flight requests finish
// (up to grace) while it ends the terminals, then stops the background work
// and waits for it, the warm pool's removal included. When Serve returns,
// nothing it started runs: Close may close the database and the engine.
func (a *App) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	srv := &http.Server{
		Handler:           a.Server,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		// No WriteTimeout: the terminal's WebSockets live long and set their own deadlines.
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(a.Log.Handler(), slog.LevelWarn),
		BaseContext:    func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	// The background work stops when Serve says, after the requests and
	// the terminals, not at the signal.
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var background sync.WaitGroup
	// Runs last, whichever way Serve returns: the background work ends
	// before the caller may close what it uses.
	defer func() {
		stopBackground()
		background.Wait()
	}()
	if a.Config.DebugAddr != "" {
		if err := a.serveDebug(bgCtx, a.Config.DebugAddr); err != nil {
			return err
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	background.Go(func() { a.Background(bgCtx) })
	a.Log.Info("serving", "addr", ln.Addr().String(), "version", Version)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.Log.Info("shutting down: waiting for in-flight requests", "grace", grace.String())
	// Uploads waiting for an image decode answer 503 at once: a decode
	// cannot be cut short, and the shutdown does not wait for one.
	a.Profiles.Stop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	// The server does not wait for hijacked connections: the terminals are
	// ended and waited for beside it.
	var terminals sync.WaitGroup
	var terr error
	terminals.Go(func() { terr = a.Terminals.Shutdown(sctx) })
	err := srv.Shutdown(sctx)
	if err != nil {
		srv.Close() // the grace is over: the connections still open are cut
	}
	terminals.Wait()
	if err = errors.Join(err, terr); err != nil {
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	a.Log.Info("shutting down: stopping the background work and removing the warm pool")
	stopBackground()
	background.Wait()
	a.Log.Info("stopped")
	return nil
}
