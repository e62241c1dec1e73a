package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"tuxlab/internal/sandbox"
)

// SandboxStore keeps sandbox templates, containers and install-wide
// settings. Its writes join the transaction ctx carries from InTx.
type SandboxStore struct{ *DB }

// Sandboxes returns the sandboxes' store over the shared pool.
func (s *DB) Sandboxes() *SandboxStore { return &SandboxStore{s} }

var _ sandbox.Store = (*SandboxStore)(nil)

const templateColumns = `id, name, description, kind, image, memory_mb, cpu_millis, pids_limit, disk_mb, network, runtime,
	run_as, shell, cap_add, no_new_privileges, extra_disks_mb, created_at, updated_at`

func scanTemplate(row scanner) (*sandbox.Template, error) {
	var (
		t                   sandbox.Template
		shell, capAd, disks string
	)
	err := row.Scan(&t.ID, &t.Name, &t.Description, &t.Kind, &t.Image, &t.MemoryMB, &t.CPUMillis, &t.PidsLimit, &t.DiskMB,
		&t.Network, &t.Runtime, &t.User, &shell, &capAd, &t.NoNewPrivileges, &disks, &t.CreatedAt, &t.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sandbox.ErrTemplateNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(shell), &t.Shell); err != nil {
		return nil, fmt.Errorf("template %d shell: %w", t.ID, err)
	}
	if err := json.Unmarshal([]byte(capAd), &t.CapAdd); err != nil {
		return nil, fmt.Errorf("template %d cap_add: %w", t.ID, err)
	}
	if err := json.Unmarshal([]byte(disks), &t.ExtraDisksMB); err != nil {
		return nil, fmt.Errorf("template %d extra_disks_mb: %w", t.ID, err)
	}
	t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	return &t, nil
}

func jsonText(v any) string {
	b, _ := json.Marshal(v) // []string and []int always encode
	return string(b)
}

// diskList is a template's extra disks as stored: a JSON array, [] for none.
func diskList(mb []int) string {
	if mb == nil {
		mb = []int{}
	}
	return jsonText(mb)
}

// FindTemplates lists templates by id.
func (s *SandboxStore) FindTemplates(ctx context.Context) ([]*sandbox.Template, error) {
	rows, err := s.q(ctx).QueryContext(ctx, `SELECT `+templateColumns+` FROM sandbox_templates ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*sandbox.Template{}
	for rows.Next() {
		t, err := scanTemplate(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// FindTemplateByID returns one template.
func (s *SandboxStore) FindTemplateByID(ctx context.Context, id int64) (*sandbox.Template, error) {
	return scanTemplate(s.q(ctx).QueryRowContext(ctx, `SELECT `+templateColumns+` FROM sandbox_templates WHERE id = $1`, id))
}

// FindTemplateByName returns one template.
func (s *SandboxStore) FindTemplateByName(ctx context.Context, name string) (*sandbox.Template, error) {
	return scanTemplate(s.q(ctx).QueryRowContext(ctx, `SELECT `+templateColumns+` FROM sandbox_templates WHERE name = $1`, name))
}

func templateConflict(err error) error {
	if err = translate(err); errors.Is(err, ErrUnique) {
		return sandbox.ErrTemplateNameTaken
	}
	return err
}

// CreateTemplate inserts t and sets its ID.
func (s *SandboxStore) CreateTemplate(ctx context.Context, t *sandbox.Template) error {
	err := s.q(ctx).QueryRowContext(ctx, `INSERT INTO sandbox_templates (name, description, image, memory_mb, cpu_millis, pids_limit,
		disk_mb, network, runtime, run_as, shell, cap_add, no_new_privileges, created_at, updated_at, kind, extra_disks_mb)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) RETURNING id`,
		t.Name, t.Description, t.Image, t.MemoryMB, t.CPUMillis, t.PidsLimit, t.DiskMB, t.Network, t.Runtime, t.User,
		jsonText(t.Shell), jsonText(t.CapAdd), t.NoNewPrivileges, t.CreatedAt.UTC(), t.UpdatedAt.UTC(), kindOf(t.Kind), diskList(t.ExtraDisksMB)).Scan(&t.ID)
	return templateConflict(err)
}

// UpdateTemplate stores every field of t.
func (s *SandboxStore) UpdateTemplate(ctx context.Context, t *sandbox.Template) error {
	res, err := s.q(ctx).ExecContext(ctx, `UPDATE sandbox_templates SET name = $1, description = $2, image = $3, memory_mb = $4,
		cpu_millis = $5, pids_limit = $6, disk_mb = $7, network = $8, runtime = $9, run_as = $10, shell = $11, cap_add = $12,
		no_new_privileges = $13, updated_at = $14, kind = $15, extra_disks_mb = $16 WHERE id = $17`,
		t.Name, t.Description, t.Image, t.MemoryMB, t.CPUMillis, t.PidsLimit, t.DiskMB, t.Network, t.Runtime, t.User,
		jsonText(t.Shell), jsonText(t.CapAdd), t.NoNewPrivileges, t.UpdatedAt.UTC(), kindOf(t.Kind), diskList(t.ExtraDisksMB), t.ID)
	if err != nil {
		return templateConflict(err)
	}
	return requireRow(res, sandbox.ErrTemplateNotFound)
}

// DeleteTemplate removes a template that no container uses.
func (s *SandboxStore) DeleteTemplate(ctx context.Context, id int64) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM containers WHERE template_id = $1)
			+ (SELECT count(*) FROM labs WHERE template_id = $1) + (SELECT count(*) FROM exams WHERE template_id = $1)`, id).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return sandbox.ErrTemplateInUse
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM sandbox_templates WHERE id = $1`, id)
		if err != nil {
			return err
		}
		return requireRow(res, sandbox.ErrTemplateNotFound)
	})
}

const containerColumns = `id, user_id, template_id, kind, segment, name, engine_id, status, status_detail, created_at, started_at, stopped_at,
	expires_at, last_activity_at`

// kindOf is k as stored: a container unless it says otherwise.
func kindOf(k sandbox.Kind) sandbox.Kind {
	if k == "" {
		return sandbox.KindContainer
	}
	return k
}

func scanContainer(row scanner) (*sandbox.Container, error) {
	var (
		c                sandbox.Container
		started, stopped sql.NullTime
	)
	err := row.Scan(&c.ID, &c.UserID, &c.TemplateID, &c.Kind, &c.Segment, &c.Name, &c.EngineID, &c.Status, &c.StatusDetail, &c.CreatedAt,
		&started, &stopped, &c.ExpiresAt, &c.LastActivityAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sandbox.ErrContainerNotFound
	}
	if err != nil {
		return nil, err
	}
	c.CreatedAt, c.ExpiresAt, c.LastActivityAt = c.CreatedAt.UTC(), c.ExpiresAt.UTC(), c.LastActivityAt.UTC()
	c.StartedAt, c.StoppedAt = nullTime(started), nullTime(stopped)
	return &c, nil
}

func nullTime(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

func timeArg(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC()
}

// CreateContainer inserts c once check accepts the user's existing containers.
// The user's row is locked (PostgreSQL) or the write transaction is exclusive
// (SQLite), so two creations by one user cannot both pass a quota.
func (s *SandboxStore) CreateContainer(ctx context.Context, c *sandbox.Container, check func([]*sandbox.Container, int) error) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		running, err := s.lockHostRunning(ctx, tx)
		if err != nil {
			return err
		}
		existing, err := s.lockUserContainers(ctx, tx, c.UserID)
		if err != nil {
			return err
		}
		if err := check(existing, running); err != nil {
			return err
		}
		c.Kind = kindOf(c.Kind)
		return tx.QueryRowContext(ctx, `INSERT INTO containers (user_id, template_id, name, engine_id, status, status_detail,
			created_at, started_at, stopped_at, expires_at, last_activity_at, kind, segment)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id`,
			c.UserID, c.TemplateID, c.Name, c.EngineID, c.Status, c.StatusDetail, c.CreatedAt.UTC(), timeArg(c.StartedAt),
			timeArg(c.StoppedAt), c.ExpiresAt.UTC(), c.LastActivityAt.UTC(), c.Kind, c.Segment).Scan(&c.ID)
	})
}

// hostLock is the key of the PostgreSQL advisory lock that serialises every
// creation and start of a sandbox on the install, so the host-wide cap is
// counted by one transaction at a time ("tuxlab" in ASCII).
const hostLock = 0x7475786c6162

// lockHostRunning takes the host-wide lock (PostgreSQL; SQLite's write
// transactions are exclusive already) and counts the sandboxes running or
// being created.
func (s *DB) lockHostRunning(ctx context.Context, tx *sql.Tx) (int, error) {
	if s.dialect.Engine == Postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(hostLock)); err != nil {
			return 0, fmt.Errorf("host lock: %w", err)
		}
	}
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM containers WHERE status IN ('running', 'creating')`).Scan(&n)
	return n, err
}

// lockUserContainers locks the user's row (PostgreSQL; SQLite's write
// transactions are exclusive already) and returns the user's containers.
func (s *DB) lockUserContainers(ctx context.Context, tx *sql.Tx, userID int64) ([]*sandbox.Container, error) {
	var uid int64
	if err := tx.QueryRowContext(ctx, `SELECT id FROM users WHERE id = $1`+s.dialect.ForUpdate, userID).Scan(&uid); err != nil {
		return nil, fmt.Errorf("lock user %d: %w", userID, err)
	}
	return queryAll(ctx, tx, scanContainer, `SELECT `+containerColumns+` FROM containers WHERE user_id = $1 ORDER BY id`, userID)
}

// UpdateContainerOfUser applies change to container id with the user's other
// containers, in one transaction serialised per user.
func (s *SandboxStore) UpdateContainerOfUser(ctx context.Context, id int64, change func(*sandbox.Container, []*sandbox.Container, int) error) (*sandbox.Container, error) {
	c, err := s.FindContainerByID(ctx, id)
	if err != nil {
		return nil, err
	}
	var out *sandbox.Container
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		running, err := s.lockHostRunning(ctx, tx)
		if err != nil {
			return err
		}
		all, err := s.lockUserContainers(ctx, tx, c.UserID)
		if err != nil {
			return err
		}
		var others []*sandbox.Container
		for _, o := range all {
			if o.ID == id {
				out = o
			} else {
				others = append(others, o)
			}
		}
		if out == nil {
			return sandbox.ErrContainerNotFound
		}
		if err := change(out, others, running); err != nil {
			return err
		}
		return s.writeContainer(ctx, tx, out)
	})
	return out, err
}

// FindContainerByID returns one container.
func (s *SandboxStore) FindContainerByID(ctx context.Context, id int64) (*sandbox.Container, error) {
	return scanContainer(s.q(ctx).QueryRowContext(ctx, `SELECT `+containerColumns+` FROM containers WHERE id = $1`, id))
}

// FindContainers returns the containers f selects, by id, and how many match.
func (s *SandboxStore) FindContainers(ctx context.Context, f sandbox.ContainerFilter) ([]*sandbox.Container, int, error) {
	where, args := " WHERE 1 = 1", []any{}
	if f.UserID != 0 {
		args = append(args, f.UserID)
		where += fmt.Sprintf(" AND user_id = $%d", len(args))
	}
	if f.Status != "" {
		args = append(args, f.Status)
		where += fmt.Sprintf(" AND status = $%d", len(args))
	}
	var total int
	if err := s.q(ctx).QueryRowContext(ctx, `SELECT count(*) FROM containers`+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	query := `SELECT ` + containerColumns + ` FROM containers` + where + ` ORDER BY id`
	if f.Limit > 0 {
		args = append(args, f.Limit, f.Offset)
		query += fmt.Sprintf(" LIMIT $%d OFFSET $%d", len(args)-1, len(args))
	}
	cs, err := queryAll(ctx, s.q(ctx), scanContainer, query, args...)
	return cs, total, err
}

// UpdateContainer applies change to container id in one transaction.
func (s *SandboxStore) UpdateContainer(ctx context.Context, id int64, change func(*sandbox.Container) error) (*sandbox.Container, error) {
	var out *sandbox.Container
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		c, err := scanContainer(tx.QueryRowContext(ctx, `SELECT `+containerColumns+` FROM containers WHERE id = $1`+s.dialect.ForUpdate, id))
		if err != nil {
			return err
		}
		if err := change(c); err != nil {
			return err
		}
		out = c
		return s.writeContainer(ctx, tx, c)
	})
	return out, err
}

func (s *DB) writeContainer(ctx context.Context, tx *sql.Tx, c *sandbox.Container) error {
	_, err := tx.ExecContext(ctx, `UPDATE containers SET name = $1, engine_id = $2, status = $3, status_detail = $4,
		started_at = $5, stopped_at = $6, expires_at = $7, last_activity_at = $8 WHERE id = $9`,
		c.Name, c.EngineID, c.Status, c.StatusDetail, timeArg(c.StartedAt), timeArg(c.StoppedAt), c.ExpiresAt.UTC(),
		c.LastActivityAt.UTC(), c.ID)
	return err
}

// DeleteContainer removes a container row.
func (s *SandboxStore) DeleteContainer(ctx context.Context, id int64) error {
	res, err := s.q(ctx).ExecContext(ctx, `DELETE FROM containers WHERE id = $1`, id)
	if err != nil {
		return err
	}
	return requireRow(res, sandbox.ErrContainerNotFound)
}

// CountRunning counts running (and creating) containers on the whole install.
func (s *SandboxStore) CountRunning(ctx context.Context) (int, error) {
	var n int
	err := s.q(ctx).QueryRowContext(ctx, `SELECT count(*) FROM containers WHERE status IN ('running', 'creating')`).Scan(&n)
	return n, err
}

// Setting returns an install-wide value, or "" when unset.
func (s *SandboxStore) Setting(ctx context.Context, key string) (string, error) {
	var v string
	err := s.q(ctx).QueryRowContext(ctx, `SELECT value FROM settings WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// SetSettingIfAbsent stores value under key unless one is there, and returns
// the value in force.
func (s *SandboxStore) SetSettingIfAbsent(ctx context.Context, key, value string) (string, error) {
	if _, err := s.q(ctx).ExecContext(ctx, `INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, key, value); err != nil {
		return "", err
	}
	return s.Setting(ctx, key)
}

// SetSetting stores value under key, replacing what is there.
func (s *SandboxStore) SetSetting(ctx context.Context, key, value string) error {
	_, err := s.q(ctx).ExecContext(ctx, `INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}

// DeleteSetting removes key, if it is there.
func (s *SandboxStore) DeleteSetting(ctx context.Context, key string) error {
	_, err := s.q(ctx).ExecContext(ctx, `DELETE FROM settings WHERE key = $1`, key)
	return err
}
