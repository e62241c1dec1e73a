package httpapi_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/activity"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// The size BenchmarkDashboard seeds.
const (
	dashUsers          = 10_000
	dashEvents         = 1_000_000
	dashHeavyUsers     = 100   // learners with dashHeavyEvents rows each: half of all rows
	dashHeavyEvents    = 5_000 // rows of one heavy learner
	dashHistoryDays    = 400   // activity spreads over this many days before now
	dashPageSize       = 50    // the activity route's default page size
	dashPerSession     = 12    // activity rows per session, on average
	dashSessionMinutes = 45    // a session's length
)

// dashPasswordHash is the password hash of every seeded learner: a fixed
// string, as nobody logs in with it (tokens are issued directly).
const dashPasswordHash = "$2a$12$dashboardbenchmarkdashboardbenchmarkdashboardbenchma"

// BenchmarkDashboard measures the dashboard routes at 10,000 users and
// 1,000,000 activity rows, through a real server with real tokens, on every
// engine of the run (PostgreSQL when TUXLAB_TEST_POSTGRES_URL is set): for a
// heavy learner (5,000 activity rows, every theme done, every exam sat three
// times and every lab twice) and for a typical one (the median learner). It
// reports req/s, p50 and p99 per route with 16 concurrent clients, as
// BenchmarkAuthMe does, and GET /api/auth/me on the same database as the
// floor every route pays.
// Seeding goes straight through SQL, is not measured, and its time is logged
// (about a minute on SQLite).
//
//	go test -run - -bench BenchmarkDashboard -benchtime 1000x -v ./internal/httpapi/
func BenchmarkDashboard(b *testing.B) {
	if testing.Short() {
		b.Skip("seeds 1,000,000 activity rows; not under -short")
	}
	for _, eng := range storetest.Engines() {
		b.Run(string(eng), func(b *testing.B) {
			e := apitest.New(b, eng, func(c *config.Config) { c.BundledCurriculum = true })
			learners := seedDashboard(b, e)
			srv := httptest.NewServer(e.App.Server) // without the test-only OpenAPI validation
			defer srv.Close()
			for _, l := range learners {
				token := e.Token(l.user)
				checkDashboard(b, srv, l, token)
				for _, r := range dashRoutes(l) {
					b.Run(l.label+"/"+r.name, func(b *testing.B) { benchGet(b, srv, r.path, token) })
				}
			}
			// The floor: the token check and user read every route pays.
			token := e.Token(learners[1].user)
			b.Run("baseline/auth_me", func(b *testing.B) { benchGet(b, srv, "/api/auth/me", token) })
		})
	}
}

// dashLearner is a seeded learner the benchmark measures.
type dashLearner struct {
	label          string
	user           *auth.User
	events, themes int
	exams, labs    int // distinct exams and labs attempted
}

type dashRoute struct{ name, path string }

// dashRoutes are the routes measured for l: the activity route on page 1, on
// l's last page (the deepest OFFSET) when l has more than one, and filtered by
// kind.
func dashRoutes(l *dashLearner) []dashRoute {
	routes := []dashRoute{
		{"stats", "/api/dashboard/stats"},
		{"activity_page1", "/api/dashboard/activity?page=1"},
	}
	if last := (l.events + dashPageSize - 1) / dashPageSize; last > 1 {
		routes = append(routes, dashRoute{"activity_page" + strconv.Itoa(last), "/api/dashboard/activity?page=" + strconv.Itoa(last)})
	}
	return append(routes,
		dashRoute{"activity_kind", "/api/dashboard/activity?kind=lab_submitted"}, // 8% of the rows
		dashRoute{"analytics_30d", "/api/dashboard/analytics?days=30"},
		dashRoute{"analytics_366d", "/api/dashboard/analytics?days=366"})
}

// checkDashboard makes sure the routes answer with the seeded numbers before
// they are timed, so the benchmark measures real work.
func checkDashboard(b *testing.B, srv *httptest.Server, l *dashLearner, token string) {
	b.Helper()
	get := func(path string, v any) http.Header {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := srv.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			b.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		if err := json.Unmarshal(body, v); err != nil {
			b.Fatalf("%s: %v", path, err)
		}
		return resp.Header
	}
	var st dashboardStatsBody
	get("/api/dashboard/stats", &st)
	if st.Themes.Completed != l.themes || st.Exams.Attempted != l.exams || st.Labs.Attempted != l.labs || st.LastActiveAt == nil {
		b.Fatalf("%s stats: %d themes, %d exams, %d labs; seeded %d, %d, %d", l.label,
			st.Themes.Completed, st.Exams.Attempted, st.Labs.Attempted, l.themes, l.exams, l.labs)
	}
	var page []json.RawMessage
	h := get("/api/dashboard/activity?page=1", &page)
	if h.Get("X-Total-Count") != strconv.Itoa(l.events) || len(page) != min(l.events, dashPageSize) {
		b.Fatalf("%s activity: total %s, %d on page 1; seeded %d", l.label, h.Get("X-Total-Count"), len(page), l.events)
	}
	var a analyticsBody
	get("/api/dashboard/analytics?days=366", &a)
	n := 0
	for _, d := range a.Days {
		n += d.Events
	}
	b.Logf("%s: user %d, %d activity rows (%d in the last 366 days), %d of %d themes, %d exams and %d labs attempted, streak %d/%d",
		l.label, l.user.ID, l.events, n, st.Themes.Completed, st.Themes.Total, st.Exams.Attempted, st.Labs.Attempted,
		st.Streak.Current, st.Streak.Longest)
}

// dashSubject is a theme, lab or exam of the bundled curriculum.
type dashSubject struct {
	id, module    int64 // module 0: none
	title         string
	limit, passAt int // time limit in minutes and passing score (labs and exams)
}

func (s dashSubject) moduleArg() any {
	if s.module == 0 {
		return nil
	}
	return s.module
}

// dashEvent is one activity row to seed.
type dashEvent struct {
	user    int32 // index into the seeded users
	kind    uint8 // index into activity.Kinds
	subject int16 // index into themes, labs or exams, by kind
	at      int64 // Unix microseconds
}

// dashAttempt is one finished exam or lab attempt to seed.
type dashAttempt struct {
	user, subject int32
	started       int64 // Unix microseconds
	minutes       int32
	score         int16
}

// seedDashboard fills e's database: 10,000 learners, 1,000,000 activity rows
// in sessions over the last 400 days, inserted in the order they would have
// been written, a few hundred thousand theme completions and tens of
// thousands of finished attempts on the bundled labs and exams. It returns a
// heavy and a typical learner.
func seedDashboard(b *testing.B, e *apitest.Env) []*dashLearner {
	b.Helper()
	ctx := context.Background()
	db := e.DB.SQL()
	rng := rand.New(rand.NewPCG(20261123, 1))
	now := time.Now().UTC().Truncate(time.Microsecond)
	began := time.Now()

	themes := dashSubjects(b, db, `SELECT t.id, t.module_id, t.title, 0, 0 FROM themes t JOIN modules m ON m.id = t.module_id
		ORDER BY m.order_index, m.id, t.order_index, t.id`)
	labs := dashSubjects(b, db, `SELECT id, module_id, title, time_limit_minutes, passing_score FROM labs ORDER BY id`)
	exams := dashSubjects(b, db, `SELECT id, module_id, title, time_limit_minutes, passing_score FROM exams ORDER BY id`)
	if len(themes) < 50 || len(labs) == 0 || len(exams) == 0 {
		b.Fatalf("bundled curriculum: %d themes, %d labs, %d exams", len(themes), len(labs), len(exams))
	}

	// Users.
	step := time.Now()
	created := now.AddDate(0, 0, -dashHistoryDays-30)
	seedInsert(b, db, "users", []string{"username", "email", "password_hash", "role", "is_active", "password_changed_at", "created_at", "updated_at"},
		dashUsers, func(i int, row []any) {
			name := fmt.Sprintf("learner%05d", i)
			row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7] = name, name+"@tuxlab.org", dashPasswordHash, "student", true, created, created, created
		})
	ids := make([]int64, 0, dashUsers)
	rows, err := db.QueryContext(ctx, `SELECT id FROM users WHERE username LIKE 'learner%' ORDER BY username`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if len(ids) != dashUsers {
		b.Fatalf("%d users seeded", len(ids))
	}
	tUsers := time.Since(step)

	// How many activity rows each learner has: 100 heavy learners with 5,000
	// each, the other half of the rows spread over everyone else with an
	// exponential distribution (median about 35, a long tail).
	counts := make([]int, dashUsers)
	weights := make([]float64, dashUsers)
	var sum float64
	for i := dashHeavyUsers; i < dashUsers; i++ {
		weights[i] = rng.ExpFloat64()
		sum += weights[i]
	}
	rest, assigned := dashEvents-dashHeavyUsers*dashHeavyEvents, 0
	for i := range counts {
		if i < dashHeavyUsers {
			counts[i] = dashHeavyEvents
			continue
		}
		counts[i] = int(weights[i] / sum * float64(rest))
		assigned += counts[i]
	}
	for i := 0; assigned < rest; i++ {
		counts[dashHeavyUsers+i%(dashUsers-dashHeavyUsers)]++
		assigned++
	}
	sorted := slices.Clone(counts[dashHeavyUsers:])
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	typical := dashHeavyUsers + slices.Index(counts[dashHeavyUsers:], median)

	// Activity rows, inserted oldest first as they would have been written,
	// so one learner's rows sit among everyone else's as in production.
	step = time.Now()
	kindWeights := map[activity.Kind]int{
		activity.ThemeCompleted: 25, activity.SandboxCreated: 10, activity.LabStarted: 10, activity.LabChecked: 33,
		activity.LabSubmitted: 8, activity.ExamStarted: 5, activity.ExamSubmitted: 5, activity.ProfileUpdated: 2,
		activity.PasswordChanged: 1, activity.AvatarChanged: 1,
	}
	var kindTable []uint8
	for i, k := range activity.Kinds {
		for range kindWeights[k] {
			kindTable = append(kindTable, uint8(i))
		}
	}
	history := int64(dashHistoryDays) * 24 * int64(time.Hour/time.Microsecond)
	session := int64(dashSessionMinutes) * int64(time.Minute/time.Microsecond)
	events := make([]dashEvent, 0, dashEvents)
	starts := make([]int64, 0, dashHeavyEvents)
	for u, n := range counts {
		// Learners work in sessions: about a dozen things done within
		// three quarters of an hour, sessions at random over the history.
		starts = starts[:0]
		for range max(1, n/dashPerSession) {
			starts = append(starts, now.UnixMicro()-session-rng.Int64N(history-session))
		}
		for range n {
			at := starts[rng.IntN(len(starts))] + rng.Int64N(session)
			ev := dashEvent{user: int32(u), kind: kindTable[rng.IntN(len(kindTable))], at: at}
			switch activity.Kinds[ev.kind] {
			case activity.ThemeCompleted:
				ev.subject = int16(rng.IntN(len(themes)))
			case activity.SandboxCreated, activity.LabStarted, activity.LabChecked, activity.LabSubmitted:
				ev.subject = int16(rng.IntN(len(labs)))
			case activity.ExamStarted, activity.ExamSubmitted:
				ev.subject = int16(rng.IntN(len(exams)))
			}
			events = append(events, ev)
		}
	}
	slices.SortFunc(events, func(x, y dashEvent) int { return int(x.at - y.at) })
	seedInsert(b, db, "activity", []string{"user_id", "kind", "at", "subject_id", "title", "score", "passed", "module_id"},
		len(events), func(i int, row []any) {
			ev := events[i]
			kind := activity.Kinds[ev.kind]
			row[0], row[1], row[2] = ids[ev.user], string(kind), time.UnixMicro(ev.at).UTC()
			row[3], row[4], row[5], row[6], row[7] = int64(0), "", nil, nil, nil
			var s dashSubject
			switch kind {
			case activity.ThemeCompleted:
				s = themes[ev.subject]
			case activity.LabStarted, activity.LabChecked, activity.LabSubmitted:
				s = labs[ev.subject]
			case activity.ExamStarted, activity.ExamSubmitted:
				s = exams[ev.subject]
			case activity.SandboxCreated:
				row[3] = int64(ev.at%100000 + 1) // a sandbox id
				return
			default:
				return
			}
			row[3], row[4], row[7] = s.id, s.title, s.moduleArg()
			if kind == activity.LabSubmitted || kind == activity.ExamSubmitted {
				score := int(ev.at % 101)
				row[5], row[6] = score, score >= s.passAt
			}
		})
	tEvents := time.Since(step)

	// Theme completions: heavy learners finished every theme, the others the
	// first k themes of the curriculum, k uniform in 0..all.
	step = time.Now()
	type completion struct {
		user  int32
		theme int16
		at    int64
	}
	var completions []completion
	done := make([]int, dashUsers)
	for u := range dashUsers {
		done[u] = len(themes)
		if u >= dashHeavyUsers {
			done[u] = rng.IntN(len(themes) + 1)
		}
		for t := range done[u] {
			completions = append(completions, completion{int32(u), int16(t), now.UnixMicro() - 1 - rng.Int64N(history)})
		}
	}
	seedInsert(b, db, "theme_completions", []string{"user_id", "theme_id", "completed_at"}, len(completions), func(i int, row []any) {
		c := completions[i]
		row[0], row[1], row[2] = ids[c.user], themes[c.theme].id, time.UnixMicro(c.at).UTC()
	})
	tCompletions := time.Since(step)

	// Finished attempts: heavy learners sat every exam 3 times and every lab
	// twice, the others up to 3 exams and 5 labs at random.
	step = time.Now()
	examsOf, labsOf := make([]map[int32]bool, dashUsers), make([]map[int32]bool, dashUsers)
	attempts := func(subjects []dashSubject, heavyEach, typicalMax int, of []map[int32]bool) []dashAttempt {
		var out []dashAttempt
		add := func(u, s int) {
			if of[u] == nil {
				of[u] = map[int32]bool{}
			}
			of[u][int32(s)] = true
			out = append(out, dashAttempt{user: int32(u), subject: int32(s), started: now.UnixMicro() - 1 - rng.Int64N(history),
				minutes: int32(5 + rng.IntN(subjects[s].limit+10)), score: int16(rng.IntN(101))})
		}
		for u := range dashUsers {
			if u < dashHeavyUsers {
				for s := range subjects {
					for range heavyEach {
						add(u, s)
					}
				}
				continue
			}
			for range rng.IntN(typicalMax + 1) {
				add(u, rng.IntN(len(subjects)))
			}
		}
		return out
	}
	attemptCols := func(subject string) []string {
		return []string{subject, "user_id", "status", "started_at", "expires_at", "finished_at", "points", "max_points", "score", "passed"}
	}
	attemptRow := func(subjects []dashSubject, list []dashAttempt) func(int, []any) {
		return func(i int, row []any) {
			a := list[i]
			s := subjects[a.subject]
			started := time.UnixMicro(a.started).UTC()
			finished := started.Add(time.Duration(a.minutes) * time.Minute)
			if finished.After(now) {
				finished = now
			}
			row[0], row[1], row[2], row[3] = s.id, ids[a.user], "submitted", started
			row[4], row[5] = started.Add(time.Duration(s.limit)*time.Minute), finished
			row[6], row[7], row[8], row[9] = int(a.score), 100, int(a.score), int(a.score) >= s.passAt
		}
	}
	examAttempts := attempts(exams, 3, 3, examsOf)
	labAttempts := attempts(labs, 2, 5, labsOf)
	seedInsert(b, db, "exam_attempts", attemptCols("exam_id"), len(examAttempts), attemptRow(exams, examAttempts))
	seedInsert(b, db, "lab_attempts", attemptCols("lab_id"), len(labAttempts), attemptRow(labs, labAttempts))
	tAttempts := time.Since(step)

	// The quarter-hour rollup the application writes with each event, built
	// here in one statement as its migration builds it for existing rows.
	quarter := `CAST(strftime('%s', at) AS INTEGER) / 900`
	if e.DB.Engine() == store.Postgres {
		quarter = `CAST(floor(extract(epoch FROM at) / 900) AS BIGINT)`
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO activity_quarters (user_id, quarter, events)
		SELECT user_id, `+quarter+`, count(*) FROM activity GROUP BY 1, 2`); err != nil {
		b.Fatal(err)
	}

	// PostgreSQL's autovacuum would have analysed and vacuumed tables this
	// size (so plans use statistics and index-only scans the visibility map);
	// do it now rather than when it happens to run. SQLite gets nothing: the
	// application never runs ANALYZE.
	step = time.Now()
	if e.DB.Engine() == store.Postgres {
		if _, err := db.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
			b.Fatal(err)
		}
	}
	tVacuum := time.Since(step)
	b.Logf("%s: seeded %d users, %d activity rows, %d theme completions, %d exam and %d lab attempts in %s "+
		"(users %s, activity %s, completions %s, attempts %s, vacuum analyze %s)",
		e.Engine, dashUsers, len(events), len(completions), len(examAttempts), len(labAttempts), time.Since(began).Round(time.Millisecond),
		tUsers.Round(time.Millisecond), tEvents.Round(time.Millisecond), tCompletions.Round(time.Millisecond),
		tAttempts.Round(time.Millisecond), tVacuum.Round(time.Millisecond))

	learner := func(label string, i int) *dashLearner {
		return &dashLearner{label: label, events: counts[i], themes: done[i], exams: len(examsOf[i]), labs: len(labsOf[i]),
			user: &auth.User{ID: ids[i], Username: fmt.Sprintf("learner%05d", i), Email: fmt.Sprintf("learner%05d@tuxlab.org", i),
				Role: auth.RoleStudent, IsActive: true, PasswordChangedAt: created, CreatedAt: created, UpdatedAt: created}}
	}
	return []*dashLearner{learner("heavy", 0), learner("typical", typical)}
}

// dashSubjects reads themes, labs or exams: id, module, title, time limit, passing score.
func dashSubjects(b *testing.B, db *sql.DB, query string) []dashSubject {
	b.Helper()
	rows, err := db.Query(query)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var out []dashSubject
	for rows.Next() {
		var s dashSubject
		var module sql.NullInt64
		if err := rows.Scan(&s.id, &module, &s.title, &s.limit, &s.passAt); err != nil {
			b.Fatal(err)
		}
		s.module = module.Int64
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// seedInsert inserts n rows into table, each filled by row(i, dst) with one
// value per column, as multi-row INSERTs of 500 rows, 40 statements per
// transaction. Seeding only: it is not what the benchmark measures.
func seedInsert(b *testing.B, db *sql.DB, table string, cols []string, n int, row func(i int, dst []any)) {
	b.Helper()
	const perStmt, stmtsPerTx = 500, 40
	text := func(rows int) string {
		var sb strings.Builder
		fmt.Fprintf(&sb, "INSERT INTO %s (%s) VALUES ", table, strings.Join(cols, ", "))
		for r := range rows {
			if r > 0 {
				sb.WriteString(", ")
			}
			sb.WriteByte('(')
			for c := range cols {
				if c > 0 {
					sb.WriteString(", ")
				}
				fmt.Fprintf(&sb, "$%d", r*len(cols)+c+1)
			}
			sb.WriteByte(')')
		}
		return sb.String()
	}
	full := text(perStmt)
	args := make([]any, perStmt*len(cols))
	ctx := context.Background()
	for i := 0; i < n; {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		stmt, err := tx.PrepareContext(ctx, full)
		if err != nil {
			tx.Rollback()
			b.Fatal(err)
		}
		for s := 0; s < stmtsPerTx && i < n; s++ {
			rows := min(perStmt, n-i)
			for r := range rows {
				row(i+r, args[r*len(cols):(r+1)*len(cols)])
			}
			if rows == perStmt {
				_, err = stmt.ExecContext(ctx, args...)
			} else {
				_, err = tx.ExecContext(ctx, text(rows), args[:rows*len(cols)]...)
			}
			if err != nil {
				tx.Rollback()
				b.Fatalf("insert into %s: %v", table, err)
			}
			i += rows
		}
		stmt.Close()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
