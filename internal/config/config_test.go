package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Env != Development || c.Addr != "127.0.0.1:8000" || c.DataDir != "./data" || c.TokenTTL.Minutes() != 480 ||
		c.SQLitePath() != "data/tuxlab.db" || c.TerminalGrace != time.Minute ||
		c.RecordingMaxBytes != 2<<20 || c.RecordingRetention != 30*24*time.Hour {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestLoadRejects(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"production without secret", map[string]string{"TUXLAB_ENV": "production"}, "SECRET_KEY"},
		{"production with a short secret", map[string]string{"TUXLAB_ENV": "production", "SECRET_KEY": "short"}, "SECRET_KEY"},
		{"bad LXCFS setting", map[string]string{"TUXLAB_SANDBOX_LXCFS": "on"}, "TUXLAB_SANDBOX_LXCFS"},
		{"unknown sandbox engine", map[string]string{"TUXLAB_SANDBOX_ENGINE": "k8s"}, "docker, kubernetes or none"},
		{"unknown env", map[string]string{"TUXLAB_ENV": "staging"}, "TUXLAB_ENV"},
		{"a proxy that is no address", map[string]string{"TUXLAB_TRUSTED_PROXIES": "10.0.0.1, proxy.local"}, "TUXLAB_TRUSTED_PROXIES"},
		{"bad ttl", map[string]string{"ACCESS_TOKEN_EXPIRE_MINUTES": "ten"}, "ACCESS_TOKEN_EXPIRE_MINUTES"},
		{"bad database", map[string]string{"DATABASE_URL": "mysql://x"}, "DATABASE_URL"},
		{"negative terminal grace", map[string]string{"TUXLAB_TERMINAL_GRACE": "-1s"}, "TUXLAB_TERMINAL_GRACE"},
		{"terminal grace over an hour", map[string]string{"TUXLAB_TERMINAL_GRACE": "2h"}, "TUXLAB_TERMINAL_GRACE"},
		{"terminal grace without a unit", map[string]string{"TUXLAB_TERMINAL_GRACE": "60"}, "TUXLAB_TERMINAL_GRACE"},
		{"bootstrap without password", map[string]string{"TUXLAB_BOOTSTRAP_ADMIN": "root:root@tuxlab.org"}, "TUXLAB_BOOTSTRAP_ADMIN_PASSWORD"},
		{"recordings of 1 KiB", map[string]string{"TUXLAB_RECORDING_MAX_BYTES": "1024"}, "TUXLAB_RECORDING_MAX_BYTES"},
		{"a retention without a unit", map[string]string{"TUXLAB_RECORDING_RETENTION": "30"}, "TUXLAB_RECORDING_RETENTION"},
	}
	for _, tt := range tests {
		if _, err := Load(env(tt.env)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want mention of %s", tt.name, err, tt.want)
		}
	}
	c, err := Load(env(map[string]string{"TUXLAB_SANDBOX_ENGINE": "kubernetes", "KUBECONFIG": "/k/config"}))
	if err != nil || c.SandboxEngine != "kubernetes" || c.Kubeconfig != "/k/config" || c.KubeNamespace != "tuxlab-sandboxes" || c.KubeStorageClass != "" {
		t.Fatalf("the kubernetes engine: %+v %v", c, err)
	}
	if c, err := Load(env(map[string]string{"TUXLAB_SANDBOX_ENGINE": "kubernetes", "TUXLAB_KUBE_STORAGE_CLASS": "fast-ssd"})); err != nil || c.KubeStorageClass != "fast-ssd" {
		t.Fatalf("kept state's storage class: %q %v", c.KubeStorageClass, err)
	}
	if c, err := Load(env(map[string]string{"TUXLAB_TERMINAL_GRACE": "0"})); err != nil || c.TerminalGrace != 0 {
		t.Fatalf("a grace of 0 (hang up at once): %v %v", c.TerminalGrace, err)
	}
	if _, err := Load(env(map[string]string{"TUXLAB_ENV": "production", "SECRET_KEY": strings.Repeat("k", 32)})); err != nil {
		t.Fatalf("strong production secret refused: %v", err)
	}
}

func TestDevelopmentSecretIsKept(t *testing.T) {
	dir := t.TempDir()
	c, _ := Load(env(map[string]string{"TUXLAB_DATA_DIR": dir}))
	if err := c.EnsureSecret(); err != nil {
		t.Fatal(err)
	}
	again, _ := Load(env(map[string]string{"TUXLAB_DATA_DIR": dir}))
	if err := again.EnsureSecret(); err != nil {
		t.Fatal(err)
	}
	if len(c.SecretKey) < MinSecretBytes || c.SecretKey != again.SecretKey {
		t.Fatal("the development secret was not kept")
	}
	fi, err := os.Stat(filepath.Join(dir, "secret_key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v %v", fi, err)
	}
	if strings.Contains(c.SecretKey.String(), string(c.SecretKey)) {
		t.Fatal("the secret prints itself")
	}
}

// TestLogAttrsHideTheDatabasePassword: the start-up line names the database
// without its password, also when the URL does not parse.
func TestLogAttrsHideTheDatabasePassword(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"postgres://u:s3cret@db:5432/tuxlab", "postgres (postgres://u:xxxxx@db:5432/tuxlab)"},
		{"postgresql://u@db/tuxlab?sslmode=disable", "postgres (postgresql://u@db/tuxlab?sslmode=disable)"},
		{"postgres://u:s3cret@db:port/tuxlab", "postgres (an unparsable URL)"},
	} {
		attrs := Config{DatabaseURL: c.url}.LogAttrs()
		for i := 0; i+1 < len(attrs); i += 2 {
			if attrs[i] == "database" && attrs[i+1] != c.want {
				t.Errorf("%s: logged %q, want %q", c.url, attrs[i+1], c.want)
			}
		}
	}
}

func TestTrustedProxiesParse(t *testing.T) {
	c, err := Load(env(map[string]string{"TUXLAB_TRUSTED_PROXIES": " 10.0.0.0/8, 192.0.2.7 ,::1"}))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(c.TrustedProxies)
	if got != "[10.0.0.0/8 192.0.2.7/32 ::1/128]" {
		t.Fatalf("parsed %s", got)
	}
}

func TestSecretsFromFiles(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "secret_key")
	if err := os.WriteFile(key, []byte(strings.Repeat("s", 40)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(env(map[string]string{"TUXLAB_ENV": "production", "SECRET_KEY_FILE": key}))
	if err != nil || string(c.SecretKey) != strings.Repeat("s", 40) {
		t.Fatalf("secret from a file: %v", err)
	}
	for name, vars := range map[string]map[string]string{
		"both":    {"SECRET_KEY": "x", "SECRET_KEY_FILE": key},
		"missing": {"SECRET_KEY_FILE": filepath.Join(dir, "nope")},
	} {
		if _, err := Load(env(vars)); err == nil || !strings.Contains(err.Error(), "SECRET_KEY") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDebugAddrLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:6060": true, "[::1]:6060": true, "localhost:6060": true,
		"0.0.0.0:6060": false, ":6060": false, "10.1.2.3:6060": false, "127.0.0.1": false,
	} {
		c, err := Load(env(map[string]string{"TUXLAB_DEBUG_ADDR": addr}))
		if (err == nil) != ok {
			t.Errorf("%q: accepted %v, want %v (%v)", addr, err == nil, ok, err)
		}
		if ok && c.DebugAddr != addr {
			t.Errorf("%q: DebugAddr %q", addr, c.DebugAddr)
		}
	}
}

// TestServeNeedsMetricsTokenInProduction: a production server refuses to
// start without the metrics token; development, and production with it, do.
func TestServeNeedsMetricsTokenInProduction(t *testing.T) {
	prod := map[string]string{"TUXLAB_ENV": "production", "SECRET_KEY": strings.Repeat("k", 32)}
	c, err := Load(env(prod))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckServe(); err == nil || !strings.Contains(err.Error(), "TUXLAB_METRICS_TOKEN") {
		t.Fatalf("production without a metrics token: %v", err)
	}
	prod["TUXLAB_METRICS_TOKEN"] = "m"
	if c, _ = Load(env(prod)); c.CheckServe() != nil {
		t.Fatalf("production with a metrics token: %v", c.CheckServe())
	}
	if c, _ = Load(env(map[string]string{"TUXLAB_DATA_DIR": t.TempDir()})); c.CheckServe() != nil {
		t.Fatalf("development: %v", c.CheckServe())
	}
}

func TestLoadMail(t *testing.T) {
	smtp := map[string]string{"TUXLAB_SMTP_URL": "smtp://tuxlab:s3cret@mail.tuxlab.org:587", "TUXLAB_MAIL_FROM": "tuxlab <noreply@tuxlab.org>"}
	c, err := Load(env(smtp))
	if err != nil {
		t.Fatal(err)
	}
	if c.PublicURL != "http://127.0.0.1:8000" {
		t.Errorf("development public URL %q, want http:// + TUXLAB_ADDR", c.PublicURL)
	}
	if line := fmt.Sprintln(c.LogAttrs()...); strings.Contains(line, "s3cret") || !strings.Contains(line, "mail.tuxlab.org") {
		t.Errorf("start-up line %s: want the SMTP server without its password", line)
	}
	if c, err := Load(env(nil)); err != nil || c.SMTPURL != "" || !strings.Contains(fmt.Sprintln(c.LogAttrs()...), "smtp off") {
		t.Errorf("without TUXLAB_SMTP_URL: %v, %v", c.LogAttrs(), err)
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range smtp {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no From", with("TUXLAB_MAIL_FROM", ""), "TUXLAB_MAIL_FROM"},
		{"two From addresses", with("TUXLAB_MAIL_FROM", "a@tuxlab.org, b@tuxlab.org"), "TUXLAB_MAIL_FROM"},
		{"another scheme", with("TUXLAB_SMTP_URL", "http://mail.tuxlab.org"), "TUXLAB_SMTP_URL"},
		{"no host", with("TUXLAB_SMTP_URL", "smtp://:587"), "TUXLAB_SMTP_URL"},
		{"a public URL that is no site", with("TUXLAB_PUBLIC_URL", "tuxlab.org"), "TUXLAB_PUBLIC_URL"},
		{"production without a public URL", with("TUXLAB_ENV", "production", "SECRET_KEY", strings.Repeat("k", 32)), "TUXLAB_PUBLIC_URL"},
	} {
		if _, err := Load(env(tt.env)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want mention of %s", tt.name, err, tt.want)
		}
	}
	c, err = Load(env(with("TUXLAB_ENV", "production", "SECRET_KEY", strings.Repeat("k", 32), "TUXLAB_PUBLIC_URL", "https://learn.tuxlab.org/")))
	if err != nil || c.PublicURL != "https://learn.tuxlab.org" {
		t.Errorf("production with a public URL: %q, %v", c.PublicURL, err)
	}
}

func TestLoadRequireEmailVerification(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		on   bool
		err  string
	}{
		{"default off", nil, false, ""},
		{"on with SMTP", map[string]string{"TUXLAB_REQUIRE_EMAIL_VERIFICATION": "true",
			"TUXLAB_SMTP_URL": "smtp://mail.tuxlab.org:587", "TUXLAB_MAIL_FROM": "noreply@tuxlab.org"}, true, ""},
		{"on without SMTP", map[string]string{"TUXLAB_REQUIRE_EMAIL_VERIFICATION": "true"}, false, "needs TUXLAB_SMTP_URL"},
		{"not a boolean", map[string]string{"TUXLAB_REQUIRE_EMAIL_VERIFICATION": "maybe"}, false, "TUXLAB_REQUIRE_EMAIL_VERIFICATION"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(env(tt.env))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want mention of %q", err, tt.err)
				}
				return
			}
			if err != nil || c.RequireEmailVerification != tt.on {
				t.Fatalf("RequireEmailVerification = %v, %v; want %v", c.RequireEmailVerification, err, tt.on)
			}
		})
	}
}
