package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"tuxlab/internal/class"
)

// ClassStore keeps classes, their learners and assignments.
type ClassStore struct{ *DB }

// Classes returns the class store over the shared pool.
func (s *DB) Classes() *ClassStore { return &ClassStore{s} }

var _ class.Store = (*ClassStore)(nil)

const classColumns = `c.id, c.owner_id, u.username, c.name, c.join_code, c.created_at,
	(SELECT count(*) FROM class_members m WHERE m.class_id = c.id)`

const classFrom = ` FROM classes c JOIN users u ON u.id = c.owner_id`

func scanClass(row scanner) (*class.Class, error) {
	var c class.Class
	err := row.Scan(&c.ID, &c.OwnerID, &c.OwnerName, &c.Name, &c.JoinCode, &c.CreatedAt, &c.Learners)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, class.ErrClassNotFound
	}
	c.CreatedAt = c.CreatedAt.UTC()
	return &c, err
}

// CreateClass inserts c unless its owner has max classes. The owner's row is
// locked (PostgreSQL; SQLite's write transactions run one at a time), so
// concurrent creations are counted one after the other.
func (s *ClassStore) CreateClass(ctx context.Context, c *class.Class, max int) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT id FROM users WHERE id = $1`+s.dialect.ForUpdate, c.OwnerID).Scan(&n); err != nil {
			return fmt.Errorf("lock the owner: %w", err)
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM classes WHERE owner_id = $1`, c.OwnerID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return class.ErrTooManyClasses
		}
		err := tx.QueryRowContext(ctx, `INSERT INTO classes (owner_id, name, join_code, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $4) RETURNING id`, c.OwnerID, c.Name, c.JoinCode, c.CreatedAt).Scan(&c.ID)
		if errors.Is(translate(err), ErrUnique) {
			return class.ErrCodeClash
		}
		return err
	})
}

// FindClassByID returns class id, or class.ErrClassNotFound.
func (s *ClassStore) FindClassByID(ctx context.Context, id int64) (*class.Class, error) {
	return scanClass(s.q(ctx).QueryRowContext(ctx, `SELECT `+classColumns+classFrom+` WHERE c.id = $1`, id))
}

// FindClassByCode returns the class whose join code is code, or class.ErrClassNotFound.
func (s *ClassStore) FindClassByCode(ctx context.Context, code string) (*class.Class, error) {
	return scanClass(s.q(ctx).QueryRowContext(ctx, `SELECT `+classColumns+classFrom+` WHERE c.join_code = $1`, code))
}

// FindClasses returns the classes f selects, oldest first.
func (s *ClassStore) FindClasses(ctx context.Context, f class.ClassFilter) ([]*class.Class, error) {
	where, args := ` WHERE 1 = 1`, []any{}
	if f.OwnerID != 0 {
		args = append(args, f.OwnerID)
		where += fmt.Sprintf(` AND c.owner_id = $%d`, len(args))
	}
	if f.MemberID != 0 {
		args = append(args, f.MemberID)
		where += fmt.Sprintf(` AND EXISTS (SELECT 1 FROM class_members m WHERE m.class_id = c.id AND m.user_id = $%d)`, len(args))
	}
	return queryAll(ctx, s.q(ctx), scanClass, `SELECT `+classColumns+classFrom+where+` ORDER BY c.created_at, c.id`, args...)
}

// SetJoinCode changes class id's join code.
func (s *ClassStore) SetJoinCode(ctx context.Context, id int64, code string, now time.Time) error {
	res, err := s.q(ctx).ExecContext(ctx, `UPDATE classes SET join_code = $1, updated_at = $2 WHERE id = $3`, code, now, id)
	if errors.Is(translate(err), ErrUnique) {
		return class.ErrCodeClash
	}
	return affected(res, err, class.ErrClassNotFound)
}

// DeleteClass removes class id with its members and assignments.
func (s *ClassStore) DeleteClass(ctx context.Context, id int64) error {
	res, err := s.q(ctx).ExecContext(ctx, `DELETE FROM classes WHERE id = $1`, id)
	return affected(res, err, class.ErrClassNotFound)
}

// affected returns notFound when a write touched no row.
func affected(res sql.Result, err error, notFound error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound
	}
	return nil
}

// AddMember makes userID a learner of the class unless it is full. The
// class's row is locked, so concurrent joins are counted one after the other.
func (s *ClassStore) AddMember(ctx context.Context, classID, userID int64, at time.Time, max int) (added bool, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM classes WHERE id = $1`+s.dialect.ForUpdate, classID).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return class.ErrClassNotFound
		}
		if err != nil {
			return err
		}
		var member bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM class_members WHERE class_id = $1 AND user_id = $2)`,
			classID, userID).Scan(&member); err != nil || member {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM class_members WHERE class_id = $1`, classID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return class.ErrClassFull
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO class_members (class_id, user_id, joined_at) VALUES ($1, $2, $3)`, classID, userID, at); err != nil {
			return err
		}
		added = true
		return nil
	})
	return added, err
}

// RemoveMember ends userID's membership of the class.
func (s *ClassStore) RemoveMember(ctx context.Context, classID, userID int64) error {
	res, err := s.q(ctx).ExecContext(ctx, `DELETE FROM class_members WHERE class_id = $1 AND user_id = $2`, classID, userID)
	return affected(res, err, class.ErrNotMember)
}

// IsMember reports whether userID is a learner of the class.
func (s *ClassStore) IsMember(ctx context.Context, classID, userID int64) (bool, error) {
	var member bool
	err := s.q(ctx).QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM class_members WHERE class_id = $1 AND user_id = $2)`,
		classID, userID).Scan(&member)
	return member, err
}

// FindMembers returns the class's learners by username.
func (s *ClassStore) FindMembers(ctx context.Context, classID int64) ([]class.Member, error) {
	return queryAll(ctx, s.q(ctx), func(row scanner) (class.Member, error) {
		var m class.Member
		err := row.Scan(&m.UserID, &m.Username, &m.JoinedAt)
		m.JoinedAt = m.JoinedAt.UTC()
		return m, err
	}, `SELECT u.id, u.username, m.joined_at FROM class_members m JOIN users u ON u.id = m.user_id
		WHERE m.class_id = $1 ORDER BY lower(u.username), u.id`, classID)
}

// members is the subquery of a class's learners' ids, the class id as $1.
const members = `(SELECT user_id FROM class_members WHERE class_id = $1)`

// FindRecords reads the class's learners' completions, attempts, events
// since a time and last activity, one query each.
func (s *ClassStore) FindRecords(ctx context.Context, classID int64, since time.Time) (*class.Records, error) {
	q := s.q(ctx)
	r := &class.Records{}
	var err error
	if r.Completions, err = queryAll(ctx, q, func(row scanner) (class.Completion, error) {
		var c class.Completion
		return c, row.Scan(&c.UserID, &c.ThemeID)
	}, `SELECT user_id, theme_id FROM theme_completions WHERE user_id IN `+members, classID); err != nil {
		return nil, err
	}
	if r.Labs, err = queryAll(ctx, q, scanLabRecord, `SELECT a.id, a.user_id, l.id, l.title, a.status, a.started_at, a.finished_at,
		a.score, a.passed, a.results FROM lab_attempts a JOIN labs l ON l.id = a.lab_id
		WHERE a.user_id IN `+members+` ORDER BY a.started_at, a.id`, classID); err != nil {
		return nil, err
	}
	if r.Exams, err = queryAll(ctx, q, scanExamRecord, `SELECT a.id, a.user_id, e.id, e.title, a.status, a.started_at, a.finished_at,
		a.score, a.passed FROM exam_attempts a JOIN exams e ON e.id = a.exam_id
		WHERE a.user_id IN `+members+` ORDER BY a.started_at, a.id`, classID); err != nil {
		return nil, err
	}
	if r.Events, err = queryAll(ctx, q, func(row scanner) (class.UserCount, error) {
		var c class.UserCount
		return c, row.Scan(&c.UserID, &c.N)
	}, `SELECT user_id, sum(events) FROM activity_quarters WHERE user_id IN `+members+` AND quarter >= $2
		GROUP BY user_id`, classID, quarterOf(since)); err != nil {
		return nil, err
	}
	// The row holding each learner's latest time, so both engines scan a
	// column of the table (SQLite types an aggregate's result as text).
	r.LastActive, err = queryAll(ctx, q, func(row scanner) (class.UserTime, error) {
		var t class.UserTime
		err := row.Scan(&t.UserID, &t.At)
		t.At = t.At.UTC()
		return t, err
	}, `SELECT a.user_id, a.at FROM activity a WHERE a.user_id IN `+members+`
		AND a.at = (SELECT max(b.at) FROM activity b WHERE b.user_id = a.user_id)`, classID)
	return r, err
}

// scanLabRecord reads a lab attempt with its per-task results. Only the
// fields of class.TaskResult are decoded: the checks' output never leaves
// the row.
func scanLabRecord(row scanner) (class.AttemptRecord, error) {
	var (
		a        class.AttemptRecord
		finished sql.NullTime
		results  string
	)
	if err := row.Scan(&a.ID, &a.UserID, &a.ItemID, &a.Title, &a.Status, &a.StartedAt, &finished, &a.Score, &a.Passed, &results); err != nil {
		return a, err
	}
	a.Tasks = []class.TaskResult{}
	if err := json.Unmarshal([]byte(results), &a.Tasks); err != nil {
		return a, fmt.Errorf("lab attempt %d results: %w", a.ID, err)
	}
	a.StartedAt, a.FinishedAt = a.StartedAt.UTC(), nullTime(finished)
	return a, nil
}

func scanExamRecord(row scanner) (class.AttemptRecord, error) {
	var (
		a        class.AttemptRecord
		finished sql.NullTime
	)
	err := row.Scan(&a.ID, &a.UserID, &a.ItemID, &a.Title, &a.Status, &a.StartedAt, &finished, &a.Score, &a.Passed)
	a.StartedAt, a.FinishedAt = a.StartedAt.UTC(), nullTime(finished)
	return a, err
}

// CreateAssignment inserts a unless the class has max assignments or one
// of the same item; the class's row is locked meanwhile.
func (s *ClassStore) CreateAssignment(ctx context.Context, a *class.Assignment, max int) error {
	table, column := "labs", "lab_id"
	if a.Kind == class.KindExam {
		table, column = "exams", "exam_id"
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM classes WHERE id = $1`+s.dialect.ForUpdate, a.ClassID).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return class.ErrClassNotFound
		}
		if err != nil {
			return err
		}
		err = tx.QueryRowContext(ctx, `SELECT title FROM `+table+` WHERE id = $1`, a.ItemID).Scan(&a.Title)
		if errors.Is(err, sql.ErrNoRows) {
			return class.ErrItemNotFound
		}
		if err != nil {
			return err
		}
		var n int
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(CASE WHEN `+column+` = $2 THEN 1 ELSE 0 END), 0) > 0
			FROM class_assignments WHERE class_id = $1`, a.ClassID, a.ItemID).Scan(&n, &exists); err != nil {
			return err
		}
		if exists {
			return class.ErrAssignmentExists
		}
		if n >= max {
			return class.ErrTooManyAssignments
		}
		return tx.QueryRowContext(ctx, `INSERT INTO class_assignments (class_id, `+column+`, due_at, created_at)
			VALUES ($1, $2, $3, $4) RETURNING id`, a.ClassID, a.ItemID, a.DueAt, a.CreatedAt).Scan(&a.ID)
	})
}

// assignmentColumns reads an assignment joined to its lab (l) and exam (e).
const assignmentColumns = `a.id, a.class_id, a.lab_id, a.exam_id, coalesce(l.title, e.title, ''), a.due_at, a.created_at`

const assignmentFrom = ` FROM class_assignments a LEFT JOIN labs l ON l.id = a.lab_id LEFT JOIN exams e ON e.id = a.exam_id`

func scanAssignment(row scanner, extra ...any) (*class.Assignment, error) {
	var (
		a           class.Assignment
		labID, exID sql.NullInt64
	)
	if err := row.Scan(append([]any{&a.ID, &a.ClassID, &labID, &exID, &a.Title, &a.DueAt, &a.CreatedAt}, extra...)...); err != nil {
		return nil, err
	}
	a.Kind, a.ItemID = class.KindLab, labID.Int64
	if exID.Valid {
		a.Kind, a.ItemID = class.KindExam, exID.Int64
	}
	a.DueAt, a.CreatedAt = a.DueAt.UTC(), a.CreatedAt.UTC()
	return &a, nil
}

// FindAssignments returns a class's assignments by due date.
func (s *ClassStore) FindAssignments(ctx context.Context, classID int64) ([]*class.Assignment, error) {
	return queryAll(ctx, s.q(ctx), func(row scanner) (*class.Assignment, error) { return scanAssignment(row) },
		`SELECT `+assignmentColumns+assignmentFrom+` WHERE a.class_id = $1 ORDER BY a.due_at, a.id`, classID)
}

// DeleteAssignment removes assignment id of the class.
func (s *ClassStore) DeleteAssignment(ctx context.Context, classID, id int64) error {
	res, err := s.q(ctx).ExecContext(ctx, `DELETE FROM class_assignments WHERE id = $1 AND class_id = $2`, id, classID)
	return affected(res, err, class.ErrAssignmentNotFound)
}

// FindLearnerAssignments returns the assignments of userID's classes by due
// date, with whether userID has finished an attempt of each and passed one.
func (s *ClassStore) FindLearnerAssignments(ctx context.Context, userID int64) ([]*class.LearnerAssignment, error) {
	return queryAll(ctx, s.q(ctx), func(row scanner) (*class.LearnerAssignment, error) {
		var la class.LearnerAssignment
		a, err := scanAssignment(row, &la.ClassName, &la.Done, &la.Passed)
		if err != nil {
			return nil, err
		}
		la.Assignment = *a
		return &la, nil
	}, `SELECT `+assignmentColumns+`, c.name,
		CASE WHEN a.lab_id IS NOT NULL
			THEN EXISTS (SELECT 1 FROM lab_attempts t WHERE t.lab_id = a.lab_id AND t.user_id = $1 AND t.status IN ('submitted', 'expired'))
			ELSE EXISTS (SELECT 1 FROM exam_attempts t WHERE t.exam_id = a.exam_id AND t.user_id = $1 AND t.status IN ('submitted', 'expired')) END,
		CASE WHEN a.lab_id IS NOT NULL
			THEN EXISTS (SELECT 1 FROM lab_attempts t WHERE t.lab_id = a.lab_id AND t.user_id = $1 AND t.passed)
			ELSE EXISTS (SELECT 1 FROM exam_attempts t WHERE t.exam_id = a.exam_id AND t.user_id = $1 AND t.passed) END`+
		assignmentFrom+` JOIN classes c ON c.id = a.class_id
		JOIN class_members m ON m.class_id = a.class_id AND m.user_id = $1
		ORDER BY a.due_at, a.id`, userID)
}
