// Package config reads tuxlab's configuration from the environment, once,
// applies the documented defaults and validates the result.
package config

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	netmail "net/mail"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"tuxlab/internal/mail"
)

// Environments tuxlab runs in.
const (
	Development = "development"
	Production  = "production"
)

// MinSecretBytes is the shortest SECRET_KEY accepted in production.
const MinSecretBytes = 32

// Config is the whole configuration of a tuxlab process.
type Config struct {
	// Now is the clock of everything that stamps or compares times: nil for
	// the wall clock. Not read from the environment: tests pin it.
	Now func() time.Time
	// RateLimitNow is the clock of the login and password-change rate
	// limits: nil for the wall clock. Not read from the environment: tests
	// move it past a limit's window.
	RateLimitNow func() time.Time
	// TOTPNow is the clock two-factor codes are checked against: nil for
	// the wall clock. Not read from the environment: tests step it by 30
	// seconds instead of waiting for the next code.
	TOTPNow func() time.Time
	// AvatarNormalize replaces the image work of an avatar upload that
	// passed profile.Check (nil: profile.Normalize). Not read from the
	// environment: tests make it slow.
	AvatarNormalize func(data []byte) ([]byte, error)
	// BcryptCost lowers the cost of password hashes for tests (0: the
	// production cost, 12). Not read from the environment.
	BcryptCost int
	// MailPoll and MailRetryBase tune the mail queue's worker (0: its
	// defaults, 5s and 30s). Not read from the environment: tests shorten
	// them.
	MailPoll, MailRetryBase time.Duration
	// TerminalPingInterval is how often a terminal pings its client and
	// checks its user again (0: 30s). Not read from the environment: tests
	// set it.
	TerminalPingInterval time.Duration
	// RecordingFlush is how often a recorded terminal writes its output to
	// the database (0: 5s), and RecordingPurgeInterval how often old
	// recordings are deleted (0: 1h). Not read from the environment: tests
	// shorten them.
	RecordingFlush, RecordingPurgeInterval time.Duration

	Env         string        // TUXLAB_ENV: development or production
	Addr        string        // TUXLAB_ADDR: listen address
	DataDir     string        // TUXLAB_DATA_DIR: SQLite file, dev secret, avatars
	DatabaseURL string        // DATABASE_URL: empty for SQLite in DataDir, or postgres://...
	SecretKey   Secret        // SECRET_KEY: signs tokens
	TokenTTL    time.Duration // ACCESS_TOKEN_EXPIRE_MINUTES
	CORSOrigins []string      // TUXLAB_CORS_ORIGINS: comma-separated allowed origins
	DockerHost  string        // DOCKER_HOST: container engine address, empty for the default socket
	LogLevel    slog.Level    // TUXLAB_LOG_LEVEL: debug, info, warn, error
	// DebugAddr, when set, serves net/http/pprof on that loopback address
	// (TUXLAB_DEBUG_ADDR); unset, no profiling endpoint exists.
	DebugAddr string

	// Limits. Each has an environment variable so an operator can tune it.
	MaxBodyBytes       int64 // TUXLAB_MAX_BODY_BYTES: JSON request bodies
	AuthPerIPPerMinute int   // TUXLAB_AUTH_RATE_IP: login and register attempts per client IP
	LoginPerUserPerMin int   // TUXLAB_AUTH_RATE_USER: login attempts per username
	BcryptWorkers      int   // TUXLAB_BCRYPT_WORKERS: password hashes computed at once (0: one less than the CPUs)

	// Sandboxes.
	SandboxEngine            string         // TUXLAB_SANDBOX_ENGINE: docker (default), kubernetes or none
	KubeNamespace            string         // TUXLAB_KUBE_NAMESPACE: the namespace of sandbox pods (kubernetes engine)
	Kubeconfig               string         // KUBECONFIG: the cluster of the kubernetes engine ("": in-cluster, else ~/.kube/config)
	KubeStorageClass         string         // TUXLAB_KUBE_STORAGE_CLASS: the class of each sandbox's volume claim keeping the learner's files across stops ("": none kept)
	SandboxMaxPerUser        int            // TUXLAB_SANDBOX_MAX_PER_USER
	SandboxMaxRunningPerUser int            // TUXLAB_SANDBOX_MAX_RUNNING_PER_USER
	SandboxMaxRunning        int            // TUXLAB_SANDBOX_MAX_RUNNING: host-wide cap
	SandboxIdleTimeout       time.Duration  // TUXLAB_SANDBOX_IDLE_TIMEOUT
	SandboxMaxLifetime       time.Duration  // TUXLAB_SANDBOX_MAX_LIFETIME
	SandboxReconcileInterval time.Duration  // TUXLAB_SANDBOX_RECONCILE_INTERVAL
	SandboxDiskMB            int            // TUXLAB_SANDBOX_DISK_MB: writable space of templates without disk_mb (0: unbounded)
	SandboxDiskCheckInterval time.Duration  // TUXLAB_SANDBOX_DISK_CHECK_INTERVAL: disk watch where the engine has no quotas
	SandboxPoolSize          int            // TUXLAB_SANDBOX_POOL_SIZE: warm sandboxes per template (0: none)
	SandboxPoolMaxAge        time.Duration  // TUXLAB_SANDBOX_POOL_MAX_AGE: a warm sandbox older than this is replaced
	SandboxToolsImage        string         // TUXLAB_SANDBOX_TOOLS_IMAGE: the trusted tools every sandbox mounts
	SandboxLXCFS             string         // TUXLAB_SANDBOX_LXCFS: auto (bind LXCFS's files when it runs) or off
	Machines                 string         // TUXLAB_MACHINES: auto (QEMU when installed) or off
	MachineImageDir          string         // TUXLAB_MACHINE_DIR: the machine images (scripts/build-machine-image.sh)
	MachineStateDir          string         // TUXLAB_MACHINE_STATE_DIR: one directory per machine
	MachineAccel             string         // TUXLAB_MACHINE_ACCEL: kvm, tcg or empty (KVM when a canary boots under it)
	MachineMaxMemoryMB       int            // TUXLAB_MACHINE_MAX_MEMORY_MB: the most a machine template may ask for
	MachineWarm              bool           // TUXLAB_MACHINE_WARM: prepare each machine template's saved state at start, so machines start warm
	MachineBootTimeout       time.Duration  // TUXLAB_MACHINE_BOOT_TIMEOUT: a machine not answering by then is stopped and marked broken
	TerminalIdleTimeout      time.Duration  // TUXLAB_TERMINAL_IDLE_TIMEOUT
	TerminalsPerSandbox      int            // TUXLAB_TERMINALS_PER_SANDBOX
	TerminalGrace            time.Duration  // TUXLAB_TERMINAL_GRACE: a dropped terminal's shell waits this long for its client (0: hang up at once)
	RecordingMaxBytes        int64          // TUXLAB_RECORDING_MAX_BYTES: the most one terminal recording keeps
	RecordingRetention       time.Duration  // TUXLAB_RECORDING_RETENTION: recordings older than this are deleted
	LabCheckInterval         time.Duration  // TUXLAB_LAB_CHECK_INTERVAL: from the end of one lab check of an attempt to the next
	LabCheckBudget           time.Duration  // TUXLAB_LAB_CHECK_BUDGET: the wall time of a whole lab check, every task
	LabAttemptsPerDay        int            // TUXLAB_LAB_ATTEMPTS_PER_DAY: attempts a learner starts of one lab in 24 hours
	TrustedProxies           []netip.Prefix // TUXLAB_TRUSTED_PROXIES: peers whose X-Forwarded-For is believed
	MetricsToken             Secret         // TUXLAB_METRICS_TOKEN: when set, /metrics needs it as a bearer token
	CheckTimeout             time.Duration  // TUXLAB_CHECK_TIMEOUT: one check script of a lab task or practical question
	AvatarDecoders           int            // TUXLAB_AVATAR_DECODERS: avatar images decoded at once (0: half the CPUs, 1 to 4)
	AvatarDecodeTimeout      time.Duration  // TUXLAB_AVATAR_DECODE_TIMEOUT: how long an upload waits for its image's decode

	// BundledCurriculum loads the embedded curriculum into a database with no
	// modules at start (TUXLAB_BUNDLED_CURRICULUM, default true).
	BundledCurriculum bool

	// Mail (password reset). SMTPURL empty turns it off.
	SMTPURL   Secret // TUXLAB_SMTP_URL: smtp://user:pass@host:587 (STARTTLS when offered) or smtps://...:465
	MailFrom  string // TUXLAB_MAIL_FROM: the From of tuxlab's mail, such as "tuxlab <noreply@example.org>"
	PublicURL string // TUXLAB_PUBLIC_URL: the site's address as users reach it, for links in mail (no trailing slash)
	// RequireEmailVerification (TUXLAB_REQUIRE_EMAIL_VERIFICATION, default
	// false): a registration must open the link mailed to it before it can
	// sign in. Needs TUXLAB_SMTP_URL.
	RequireEmailVerification bool

	BootstrapAdmin string // TUXLAB_BOOTSTRAP_ADMIN: "username:email" created as admin on a database with none
	// BootstrapAdminPassword comes from TUXLAB_BOOTSTRAP_ADMIN_PASSWORD.
	BootstrapAdminPassword Secret
}

// Secret is a string that never prints its value, so a Config can be logged.
type Secret string

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "******"
}

// LogValue keeps secrets out of structured logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// FileSecrets are the variables that may instead name a file holding the
// value, as NAME_FILE (Docker and systemd credentials, Kubernetes secrets):
// secrets then stay out of the environment, which other processes can read.
var FileSecrets = []string{"SECRET_KEY", "DATABASE_URL", "TUXLAB_BOOTSTRAP_ADMIN_PASSWORD", "TUXLAB_METRICS_TOKEN", "TUXLAB_SMTP_URL"}

// withFileSecrets wraps getenv so that NAME reads the file NAME_FILE names.
func withFileSecrets(getenv func(string) string) (func(string) string, error) {
	values := map[string]string{}
	for _, name := range FileSecrets {
		path := getenv(name + "_FILE")
		if path == "" {
			continue
		}
		if getenv(name) != "" {
			return nil, fmt.Errorf("set %s or %s_FILE, not both", name, name)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s_FILE: %w", name, err)
		}
		values[name] = strings.TrimRight(string(b), "\r\n")
	}
	return func(k string) string {
		if v, ok := values[k]; ok {
			return v
		}
		return getenv(k)
	}, nil
}

// Load reads the configuration through getenv and validates it. Files are
// read only for NAME_FILE variables; see EnsureSecret for the development secret.
func Load(getenv func(string) string) (Config, error) {
	getenv, err := withFileSecrets(getenv)
	if err != nil {
		return Config{}, err
	}
	c := Config{
		Env:                stringOr(getenv("TUXLAB_ENV"), Development),
		Addr:               stringOr(getenv("TUXLAB_ADDR"), "127.0.0.1:8000"),
		DataDir:            stringOr(getenv("TUXLAB_DATA_DIR"), "./data"),
		DatabaseURL:        getenv("DATABASE_URL"),
		SecretKey:          Secret(getenv("SECRET_KEY")),
		DockerHost:         getenv("DOCKER_HOST"),
		BootstrapAdmin:     getenv("TUXLAB_BOOTSTRAP_ADMIN"),
		MaxBodyBytes:       1 << 20,
		AuthPerIPPerMinute: 30,
		LoginPerUserPerMin: 10,
	}
	c.BootstrapAdminPassword = Secret(getenv("TUXLAB_BOOTSTRAP_ADMIN_PASSWORD"))
	env := envParser{getenv: getenv}
	if c.Env != Development && c.Env != Production {
		env.fail(fmt.Errorf("TUXLAB_ENV must be %q or %q, not %q", Development, Production, c.Env))
	}
	c.TokenTTL = time.Duration(env.int("ACCESS_TOKEN_EXPIRE_MINUTES", 480, 1, 60*24*30)) * time.Minute
	c.MaxBodyBytes = int64(env.int("TUXLAB_MAX_BODY_BYTES", int(c.MaxBodyBytes), 1024, 64<<20))
	c.AuthPerIPPerMinute = env.int("TUXLAB_AUTH_RATE_IP", c.AuthPerIPPerMinute, 1, 100000)
	c.LoginPerUserPerMin = env.int("TUXLAB_AUTH_RATE_USER", c.LoginPerUserPerMin, 1, 100000)
	c.BcryptWorkers = env.int("TUXLAB_BCRYPT_WORKERS", 0, 0, 256)
	c.BundledCurriculum = env.bool("TUXLAB_BUNDLED_CURRICULUM", true)
	c.SandboxEngine = stringOr(getenv("TUXLAB_SANDBOX_ENGINE"), "docker")
	if c.SandboxEngine != "docker" && c.SandboxEngine != "kubernetes" && c.SandboxEngine != "none" {
		env.fail(fmt.Errorf("TUXLAB_SANDBOX_ENGINE must be docker, kubernetes or none, not %q", c.SandboxEngine))
	}
	c.KubeNamespace = stringOr(getenv("TUXLAB_KUBE_NAMESPACE"), "tuxlab-sandboxes")
	c.Kubeconfig = getenv("KUBECONFIG")
	c.KubeStorageClass = getenv("TUXLAB_KUBE_STORAGE_CLASS")
	c.SandboxMaxPerUser = env.int("TUXLAB_SANDBOX_MAX_PER_USER", 3, 1, 1000)
	c.SandboxMaxRunningPerUser = env.int("TUXLAB_SANDBOX_MAX_RUNNING_PER_USER", 2, 1, 1000)
	c.SandboxMaxRunning = env.int("TUXLAB_SANDBOX_MAX_RUNNING", 20, 1, 100000)
	c.SandboxIdleTimeout = env.duration("TUXLAB_SANDBOX_IDLE_TIMEOUT", 30*time.Minute)
	c.SandboxMaxLifetime = env.duration("TUXLAB_SANDBOX_MAX_LIFETIME", 24*time.Hour)
	c.SandboxReconcileInterval = env.duration("TUXLAB_SANDBOX_RECONCILE_INTERVAL", time.Minute)
	c.SandboxDiskMB = env.int("TUXLAB_SANDBOX_DISK_MB", 2048, 0, 1<<20)
	c.SandboxDiskCheckInterval = env.duration("TUXLAB_SANDBOX_DISK_CHECK_INTERVAL", 5*time.Second)
	c.SandboxPoolSize = env.int("TUXLAB_SANDBOX_POOL_SIZE", 1, 0, 50)
	c.SandboxPoolMaxAge = env.duration("TUXLAB_SANDBOX_POOL_MAX_AGE", time.Hour)
	c.SandboxToolsImage = stringOr(getenv("TUXLAB_SANDBOX_TOOLS_IMAGE"), "tuxlab/sandbox-tools:latest")
	c.SandboxLXCFS = stringOr(getenv("TUXLAB_SANDBOX_LXCFS"), "auto")
	if c.SandboxLXCFS != "auto" && c.SandboxLXCFS != "off" {
		env.fail(fmt.Errorf("TUXLAB_SANDBOX_LXCFS must be auto or off, not %q", c.SandboxLXCFS))
	}
	c.Machines = stringOr(getenv("TUXLAB_MACHINES"), "auto")
	if c.Machines != "auto" && c.Machines != "off" {
		env.fail(fmt.Errorf("TUXLAB_MACHINES must be auto or off, not %q", c.Machines))
	}
	c.MachineImageDir = stringOr(getenv("TUXLAB_MACHINE_DIR"), "/var/lib/tuxlab/machine")
	c.MachineStateDir = stringOr(getenv("TUXLAB_MACHINE_STATE_DIR"), "/var/lib/tuxlab/machines")
	c.MachineAccel = getenv("TUXLAB_MACHINE_ACCEL")
	if c.MachineAccel != "" && c.MachineAccel != "kvm" && c.MachineAccel != "tcg" {
		env.fail(fmt.Errorf("TUXLAB_MACHINE_ACCEL must be kvm, tcg or empty, not %q", c.MachineAccel))
	}
	c.MachineMaxMemoryMB = env.int("TUXLAB_MACHINE_MAX_MEMORY_MB", 2048, 256, 1<<20)
	c.MachineWarm = env.bool("TUXLAB_MACHINE_WARM", true)
	c.MachineBootTimeout = env.duration("TUXLAB_MACHINE_BOOT_TIMEOUT", 5*time.Minute)
	c.TerminalIdleTimeout = env.duration("TUXLAB_TERMINAL_IDLE_TIMEOUT", 15*time.Minute)
	c.TerminalsPerSandbox = env.int("TUXLAB_TERMINALS_PER_SANDBOX", 8, 1, 100)
	c.TerminalGrace = env.durationUpTo("TUXLAB_TERMINAL_GRACE", time.Minute, time.Hour)
	c.RecordingMaxBytes = int64(env.int("TUXLAB_RECORDING_MAX_BYTES", 2<<20, 4<<10, 64<<20))
	c.RecordingRetention = env.duration("TUXLAB_RECORDING_RETENTION", 30*24*time.Hour)
	c.LabCheckInterval = env.duration("TUXLAB_LAB_CHECK_INTERVAL", 5*time.Second)
	c.LabCheckBudget = env.duration("TUXLAB_LAB_CHECK_BUDGET", 30*time.Second)
	c.LabAttemptsPerDay = env.int("TUXLAB_LAB_ATTEMPTS_PER_DAY", 10, 1, 1000)
	c.CheckTimeout = env.duration("TUXLAB_CHECK_TIMEOUT", 10*time.Second)
	c.AvatarDecoders = env.int("TUXLAB_AVATAR_DECODERS", 0, 0, 64)
	c.AvatarDecodeTimeout = env.duration("TUXLAB_AVATAR_DECODE_TIMEOUT", 10*time.Second)
	c.MetricsToken = Secret(getenv("TUXLAB_METRICS_TOKEN"))
	if c.DebugAddr = getenv("TUXLAB_DEBUG_ADDR"); c.DebugAddr != "" && !isLoopback(c.DebugAddr) {
		env.fail(fmt.Errorf("TUXLAB_DEBUG_ADDR must be a loopback address such as 127.0.0.1:6060, not %q: profiles show memory and code paths", c.DebugAddr))
	}
	for _, p := range strings.Split(getenv("TUXLAB_TRUSTED_PROXIES"), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			addr, aerr := netip.ParseAddr(p)
			if aerr != nil {
				env.fail(fmt.Errorf("TUXLAB_TRUSTED_PROXIES: %q is neither an IP address nor a CIDR prefix (such as 10.0.0.0/8)", p))
				continue
			}
			prefix = netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen())
		}
		c.TrustedProxies = append(c.TrustedProxies, prefix.Masked())
	}
	for _, o := range strings.Split(getenv("TUXLAB_CORS_ORIGINS"), ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.CORSOrigins = append(c.CORSOrigins, strings.TrimRight(o, "/"))
		}
	}
	switch lvl := strings.ToLower(getenv("TUXLAB_LOG_LEVEL")); lvl {
	case "", "info":
		c.LogLevel = slog.LevelInfo
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "warn":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		env.fail(fmt.Errorf("TUXLAB_LOG_LEVEL must be debug, info, warn or error, not %q", lvl))
	}
	if c.DatabaseURL != "" && !IsPostgresURL(c.DatabaseURL) && !strings.HasPrefix(c.DatabaseURL, "sqlite:") {
		env.fail(errors.New("DATABASE_URL must start with postgres://, postgresql:// or sqlite: (or be unset for SQLite in the data directory)"))
	}
	c.loadMail(getenv, &env)
	if c.Env == Production && len(c.SecretKey) < MinSecretBytes {
		env.fail(fmt.Errorf("production needs SECRET_KEY of at least %d bytes: generate one with 'openssl rand -hex 32'", MinSecretBytes))
	}
	if c.BootstrapAdmin != "" {
		if u, e, ok := strings.Cut(c.BootstrapAdmin, ":"); !ok || u == "" || e == "" {
			env.fail(errors.New("TUXLAB_BOOTSTRAP_ADMIN must be username:email"))
		} else if c.BootstrapAdminPassword == "" {
			env.fail(errors.New("TUXLAB_BOOTSTRAP_ADMIN needs TUXLAB_BOOTSTRAP_ADMIN_PASSWORD"))
		}
	}
	return c, errors.Join(env.errs...)
}

// loadMail reads the mail settings: an SMTP URL turns password reset on,
// and then needs a From address and the site's public address (in
// development, http://TUXLAB_ADDR when unset).
func (c *Config) loadMail(getenv func(string) string, env *envParser) {
	c.SMTPURL = Secret(getenv("TUXLAB_SMTP_URL"))
	c.MailFrom = strings.TrimSpace(getenv("TUXLAB_MAIL_FROM"))
	c.PublicURL = strings.TrimRight(strings.TrimSpace(getenv("TUXLAB_PUBLIC_URL")), "/")
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			env.fail(fmt.Errorf("TUXLAB_PUBLIC_URL must be the site's address such as https://tuxlab.example.org, not %q", c.PublicURL))
		}
	}
	c.RequireEmailVerification = env.bool("TUXLAB_REQUIRE_EMAIL_VERIFICATION", false)
	if c.SMTPURL == "" {
		if c.RequireEmailVerification {
			env.fail(errors.New("TUXLAB_REQUIRE_EMAIL_VERIFICATION=true needs TUXLAB_SMTP_URL: the verification link is sent by mail, and without a mail server nobody who registers could ever sign in"))
		}
		return
	}
	if _, err := mail.ParseServer(string(c.SMTPURL)); err != nil {
		env.fail(fmt.Errorf("TUXLAB_SMTP_URL: %w", err))
	}
	if a, err := netmail.ParseAddress(c.MailFrom); err != nil {
		env.fail(fmt.Errorf("TUXLAB_SMTP_URL needs TUXLAB_MAIL_FROM, the From of its mail, such as \"tuxlab <noreply@example.org>\" (not %q)", c.MailFrom))
	} else if strings.ContainsAny(c.MailFrom, "\r\n") || !strings.Contains(a.Address, "@") {
		env.fail(fmt.Errorf("TUXLAB_MAIL_FROM must be one address such as \"tuxlab <noreply@example.org>\", not %q", c.MailFrom))
	}
	if c.PublicURL == "" {
		if c.Env == Production {
			env.fail(errors.New("TUXLAB_SMTP_URL needs TUXLAB_PUBLIC_URL in production: the site's address (such as https://tuxlab.example.org) that reset links in mail point to"))
		} else {
			c.PublicURL = "http://" + c.Addr
		}
	}
}

// CheckServe reports what a server needs beyond what every command does: in
// production, the metrics token, since /metrics tells about every learner's
// activity (the administration commands serve no metrics and do without).
func (c Config) CheckServe() error {
	if c.Env == Production && c.MetricsToken == "" {
		return errors.New("production needs TUXLAB_METRICS_TOKEN (or TUXLAB_METRICS_TOKEN_FILE), the bearer token /metrics asks for: generate one with 'openssl rand -hex 32' (docs/operations.md)")
	}
	return nil
}

// isLoopback reports whether addr is HOST:PORT with a loopback host.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// IsPostgresURL reports whether url selects PostgreSQL.
func IsPostgresURL(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

// SQLitePath returns the SQLite file to use when DatabaseURL does not select PostgreSQL.
func (c Config) SQLitePath() string {
	if p, ok := strings.CutPrefix(c.DatabaseURL, "sqlite:"); ok {
		return strings.TrimPrefix(p, "//")
	}
	return filepath.Join(c.DataDir, "tuxlab.db")
}

// EnsureSecret fills an empty SecretKey in development from a file in the data
// directory, creating the file with a random key the first time, so tokens survive
// restarts. Production keys always come from the environment (Load checks them).
func (c *Config) EnsureSecret() error {
	if c.SecretKey != "" {
		return nil
	}
	if c.Env == Production {
		return errors.New("SECRET_KEY is required in production")
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(c.DataDir, "secret_key")
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) >= MinSecretBytes {
		c.SecretKey = Secret(strings.TrimSpace(string(b)))
		return nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return err
	}
	key := hex.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	c.SecretKey = Secret(key)
	return nil
}

// LogAttrs describes the configuration for the start-up log line, secrets masked.
func (c Config) LogAttrs() []any {
	db := "sqlite:" + c.SQLitePath()
	if IsPostgresURL(c.DatabaseURL) {
		db = "postgres (an unparsable URL)"
		if u, err := url.Parse(c.DatabaseURL); err == nil {
			db = "postgres (" + u.Redacted() + ")"
		}
	}
	return []any{
		"env", c.Env, "addr", c.Addr, "data_dir", c.DataDir, "database", db,
		"secret_key", c.SecretKey, "token_ttl", c.TokenTTL.String(), "cors_origins", c.CORSOrigins,
		"debug_addr", c.DebugAddr, "smtp", c.LogAttrsSMTP(), "mail_from", c.MailFrom, "public_url", c.PublicURL,
	}
}

// LogAttrsSMTP is the SMTP server with its password masked, or "off".
func (c Config) LogAttrsSMTP() string {
	if c.SMTPURL == "" {
		return "off"
	}
	s, err := mail.ParseServer(string(c.SMTPURL))
	if err != nil {
		return "(an unparsable URL)"
	}
	return s.Redacted()
}

func stringOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// envParser reads typed variables and collects every problem, so one run reports all of them.
type envParser struct {
	getenv func(string) string
	errs   []error
}

func (p *envParser) fail(err error) { p.errs = append(p.errs, err) }

// duration reads a positive Go duration such as 30m or 24h, or def when unset.
func (p *envParser) duration(name string, def time.Duration) time.Duration {
	v := p.getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		p.fail(fmt.Errorf("%s must be a positive duration such as 30m or 24h, not %q", name, v))
		return def
	}
	return d
}

// durationUpTo reads a duration from 0 to hi, or def when the variable is unset.
func (p *envParser) durationUpTo(name string, def, hi time.Duration) time.Duration {
	v := p.getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > hi {
		p.fail(fmt.Errorf("%s must be a duration from 0 to %s such as 1m or 30s, not %q", name, hi, v))
		return def
	}
	return d
}

// bool reads true/false (also 1/0, yes/no, on/off), or def when the variable is unset.
func (p *envParser) bool(name string, def bool) bool {
	switch v := strings.ToLower(p.getenv(name)); v {
	case "":
		return def
	case "true", "1", "yes", "on":
		return true
	case "false", "0", "no", "off":
		return false
	default:
		p.fail(fmt.Errorf("%s must be true or false, not %q", name, v))
		return def
	}
}

// int reads an integer in [lo, hi], or def when the variable is unset.
func (p *envParser) int(name string, def, lo, hi int) int {
	v := p.getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		p.fail(fmt.Errorf("%s must be an integer from %d to %d, not %q", name, lo, hi, v))
		return def
	}
	return n
}
