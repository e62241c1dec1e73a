package httpapi_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/store"
)

// clock is a time the test moves by hand. Pinned, a cached user never ages,
// so what a test sees after a change comes from the cache being dropped,
// never from its entry running out.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// withClock makes c the clock of a tuxlab (the store ages cached users by it).
func withClock(c *clock) apitest.Option {
	return func(cfg *config.Config) { cfg.Now = c.now }
}

func userPath(u *apitest.User, rest string) string {
	return "/api/admin/users/" + strconv.FormatInt(u.ID, 10) + rest
}

// meField returns a field of GET /api/auth/me, or the error detail.
func meField(t *testing.T, e *apitest.Env, token, field string) (int, string) {
	t.Helper()
	r := e.Get("/api/auth/me", token)
	if r.Status != http.StatusOK {
		return r.Status, r.Detail()
	}
	var me map[string]any
	r.JSON(t, &me)
	return r.Status, formatField(me[field])
}

func formatField(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// TestAccountRulesHoldWithTheUserCache checks each rule of the per-request
// identity check right after a change, with the changed user's row cached
// by a request just before it and a clock that never lets it age: the next
// request sees the change.
func TestAccountRulesHoldWithTheUserCache(t *testing.T) {
	c := newClock()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		root := e.CreateUser("root", auth.RoleAdmin)
		put := func(path string) {
			t.Helper()
			e.Do(apitest.Request{Method: "PUT", Path: path, Token: root.Token}).Expect(t, http.StatusOK)
		}

		t.Run("role change", func(t *testing.T) {
			u := e.CreateUser("rita", auth.RoleStudent)
			e.Get("/api/admin/stats", u.Token).Expect(t, http.StatusForbidden)
			put(userPath(u, "/role?role=admin"))
			e.Get("/api/admin/stats", u.Token).Expect(t, http.StatusOK)
			put(userPath(u, "/role?role=student"))
			e.Get("/api/admin/stats", u.Token).Expect(t, http.StatusForbidden)
			if _, role := meField(t, e, u.Token, "role"); role != "student" {
				t.Fatalf("role %q after the demotion", role)
			}
		})

		t.Run("deactivation", func(t *testing.T) {
			u := e.CreateUser("dora", auth.RoleStudent)
			e.Get("/api/auth/me", u.Token).Expect(t, http.StatusOK)
			put(userPath(u, "/active?is_active=false"))
			if r := e.Get("/api/auth/me", u.Token).Expect(t, http.StatusForbidden); r.Detail() != "User account is inactive" {
				t.Fatalf("detail %q", r.Detail())
			}
			put(userPath(u, "/active?is_active=true"))
			e.Get("/api/auth/me", u.Token).Expect(t, http.StatusOK)
		})

		t.Run("password change", func(t *testing.T) {
			u := e.CreateUser("pavel", auth.RoleStudent)
			e.Get("/api/auth/me", u.Token).Expect(t, http.StatusOK)
			var out struct {
				AccessToken string `json:"access_token"`
			}
			e.Do(apitest.Request{Method: "PUT", Path: "/api/profile/password", Token: u.Token,
				Body: map[string]any{"current_password": apitest.Password, "new_password": "Another-pass-2"}}).Expect(t, http.StatusOK).JSON(t, &out)
			e.Get("/api/auth/me", u.Token).Expect(t, http.StatusUnauthorized)
			e.Get("/api/auth/me", out.AccessToken).Expect(t, http.StatusOK)
		})

		t.Run("logout", func(t *testing.T) {
			u := e.CreateUser("lola", auth.RoleStudent)
			older := u.Token
			e.Get("/api/auth/me", older).Expect(t, http.StatusOK)
			e.Do(apitest.Request{Method: "POST", Path: "/api/auth/logout", Token: older}).Expect(t, http.StatusOK)
			e.Get("/api/auth/me", older).Expect(t, http.StatusUnauthorized)
			e.Get("/api/auth/me", e.Token(u.User)).Expect(t, http.StatusOK) // a login after it
		})

		t.Run("e-mail change", func(t *testing.T) {
			u := e.CreateUser("emil", auth.RoleStudent)
			e.Get("/api/auth/me", u.Token).Expect(t, http.StatusOK)
			e.Do(apitest.Request{Method: "PUT", Path: "/api/profile/me", Token: u.Token,
				Body: map[string]any{"email": "emil.new@tuxlab.org"}}).Expect(t, http.StatusOK)
			if _, email := meField(t, e, u.Token, "email"); email != "emil.new@tuxlab.org" {
				t.Fatalf("e-mail %q after the change", email)
			}
		})

		t.Run("deletion", func(t *testing.T) {
			u := e.CreateUser("dave", auth.RoleStudent)
			e.Get("/api/auth/me", u.Token).Expect(t, http.StatusOK)
			e.Do(apitest.Request{Method: "DELETE", Path: userPath(u, ""), Token: root.Token}).Expect(t, http.StatusOK)
			if r := e.Get("/api/auth/me", u.Token).Expect(t, http.StatusUnauthorized); r.Detail() != "User not found" {
				t.Fatalf("detail %q", r.Detail())
			}
		})
	}, withClock(c))
}

// TestReplicasAgreeOnAccounts runs two tuxlab instances on one database and
// changes accounts through one while the other has the users cached.
//
// On PostgreSQL the other instance drops a user when the change commits
// (LISTEN/NOTIFY), however long its cache would keep the row: its clock never
// moves. The test waits for that notification to arrive (it asserts no
// duration). On SQLite no process tells another; the documented bound
// holds instead: once store.UserCacheTTL has passed, the other instance
// agrees.
func TestReplicasAgreeOnAccounts(t *testing.T) {
	apitest.Each(t, func(t *testing.T, a *apitest.Env) {
		root := a.CreateUser("root", auth.RoleAdmin)
		u := a.CreateUser("rosa", auth.RoleStudent)
		// b starts once the users exist, so that no announcement of their
		// creation reaches it late and drops a row the test expects cached.
		clockB := newClock()
		b := a.Replica(withClock(clockB))

		// b serves from its cache: a change that is not announced does not show there.
		b.Get("/api/auth/me", u.Token).Expect(t, http.StatusOK)
		setEmailUnannounced(t, a, u.ID, "rosa.raw@tuxlab.org")
		if _, email := meField(t, b, u.Token, "email"); email != "rosa@tuxlab.org" {
			t.Fatalf("b read the row again (e-mail %q): is its cache on?", email)
		}

		// agree waits until b answers want for token's field, or checks the
		// bound on SQLite: b may still show the old value until the TTL.
		agree := func(t *testing.T, token, field, want string) {
			t.Helper()
			if a.Engine == store.SQLite {
				clockB.advance(store.UserCacheTTL)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, got := meField(t, b, token, field)
				if got == want {
					return
				}
				if a.Engine == store.SQLite || time.Now().After(deadline) {
					t.Fatalf("replica b answers %s %q, want %q", field, got, want)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		put := func(path string) {
			t.Helper()
			a.Do(apitest.Request{Method: "PUT", Path: path, Token: root.Token}).Expect(t, http.StatusOK)
		}

		t.Run("role change", func(t *testing.T) {
			put(userPath(u, "/role?role=instructor"))
			agree(t, u.Token, "role", "instructor")
			// The row b read again carries the e-mail written straight into the table too.
			if _, email := meField(t, b, u.Token, "email"); email != "rosa.raw@tuxlab.org" {
				t.Fatalf("e-mail %q", email)
			}
		})
		t.Run("a change written straight into the table", func(t *testing.T) {
			// On PostgreSQL the users table's trigger announces it.
			if _, err := a.DB.SQL().ExecContext(context.Background(), `UPDATE users SET email = 'rosa.sql@tuxlab.org' WHERE id = $1`, u.ID); err != nil {
				t.Fatal(err)
			}
			agree(t, u.Token, "email", "rosa.sql@tuxlab.org")
		})
		t.Run("deactivation", func(t *testing.T) {
			put(userPath(u, "/active?is_active=false"))
			agree(t, u.Token, "", "User account is inactive")
			put(userPath(u, "/active?is_active=true"))
			agree(t, u.Token, "is_active", "true")
		})
		t.Run("logout", func(t *testing.T) {
			a.Do(apitest.Request{Method: "POST", Path: "/api/auth/logout", Token: u.Token}).Expect(t, http.StatusOK)
			agree(t, u.Token, "", "Could not validate credentials")
		})
		t.Run("password change", func(t *testing.T) {
			token := a.Token(u.User)
			b.Get("/api/auth/me", token).Expect(t, http.StatusOK)
			a.Do(apitest.Request{Method: "PUT", Path: "/api/profile/password", Token: token,
				Body: map[string]any{"current_password": apitest.Password, "new_password": "Another-pass-2"}}).Expect(t, http.StatusOK)
			agree(t, token, "", "Could not validate credentials")
		})
	})
}

// setEmailUnannounced sets user id's e-mail straight in the table without
// telling any process: on PostgreSQL with the trigger that announces changes
// to users turned off for the write.
func setEmailUnannounced(t *testing.T, e *apitest.Env, id int64, email string) {
	t.Helper()
	ctx := context.Background()
	tx, err := e.DB.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	stmts := []string{`UPDATE users SET email = $1 WHERE id = $2`}
	if e.Engine == store.Postgres {
		stmts = []string{`ALTER TABLE users DISABLE TRIGGER users_notify`, stmts[0], `ALTER TABLE users ENABLE TRIGGER users_notify`}
	}
	for _, q := range stmts {
		var args []any
		if strings.HasPrefix(q, "UPDATE") {
			args = []any{email, id}
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
