package httpapi_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/class"
	"tuxlab/internal/config"
	"tuxlab/internal/sandbox"
)

type classBody struct {
	ID           int64   `json:"id"`
	Name         string  `json:"name"`
	Role         string  `json:"role"`
	Teacher      string  `json:"teacher"`
	JoinCode     *string `json:"join_code"`
	LearnerCount *int    `json:"learner_count"`
}

type learnerBody struct {
	UserID   int64  `json:"user_id"`
	Username string `json:"username"`
	Progress struct {
		Completed, Total, Percent int
	} `json:"progress"`
	Modules []struct {
		ModuleID  int64 `json:"module_id"`
		Completed int   `json:"completed"`
		Total     int   `json:"total"`
		Percent   int   `json:"percent"`
	} `json:"modules"`
	Labs []struct {
		LabID  int64  `json:"lab_id"`
		Status string `json:"status"`
		Score  int    `json:"score"`
		Passed bool   `json:"passed"`
		Tasks  []struct {
			Title  string `json:"title"`
			Passed bool   `json:"passed"`
			Points int    `json:"points"`
		} `json:"tasks"`
	} `json:"labs"`
	Exams []struct {
		ExamID     int64   `json:"exam_id"`
		Status     string  `json:"status"`
		Score      int     `json:"score"`
		Passed     bool    `json:"passed"`
		FinishedAt *string `json:"finished_at"`
	} `json:"exams"`
	Activity struct {
		Days         int     `json:"days"`
		Events       int     `json:"events"`
		LastActiveAt *string `json:"last_active_at"`
	} `json:"activity"`
}

type learnerAssignmentBody struct {
	ID        int64  `json:"id"`
	ClassID   int64  `json:"class_id"`
	ClassName string `json:"class_name"`
	Kind      string `json:"kind"`
	ItemID    int64  `json:"item_id"`
	Title     string `json:"title"`
	Done      bool   `json:"done"`
	Passed    bool   `json:"passed"`
	Overdue   bool   `json:"overdue"`
}

// createClass creates a class as the instructor with token.
func createClass(t *testing.T, e *apitest.Env, token, name string) classBody {
	t.Helper()
	var c classBody
	post(e, token, "/api/classes", map[string]any{"name": name}).Expect(t, 201).JSON(t, &c)
	return c
}

// joinClass joins with code as the user with token and expects status.
func joinClass(t *testing.T, e *apitest.Env, token, code string, status int) classBody {
	t.Helper()
	var c classBody
	r := post(e, token, "/api/classes/join", map[string]any{"code": code}).Expect(t, status)
	if status < 300 {
		r.JSON(t, &c)
	}
	return c
}

func learnersOf(t *testing.T, e *apitest.Env, token string, classID int64, query string) []learnerBody {
	t.Helper()
	var ls []learnerBody
	e.Get(fmt.Sprintf("/api/classes/%d/learners?%s", classID, query), token).Expect(t, 200).JSON(t, &ls)
	return ls
}

func usernames(ls []learnerBody) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Username
	}
	return out
}

func del(e *apitest.Env, token, path string) *apitest.Response {
	return e.Do(apitest.Request{Method: "DELETE", Path: path, Token: token})
}

var joinCode = regexp.MustCompile(`^[ABCDEFGHJKMNPQRSTUVWXYZ23456789]{8}$`)

// TestClasses walks a class through its life: an instructor creates it,
// learners join with its code, one completes a theme and submits an exam,
// the instructor reads them in the learners view and as CSV, sets
// assignments the learners see on their dashboard, rotates the code, and
// learners leave; nobody outside the class sees any of it.
func TestClasses(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ids := loadFixture(t, e)
		admin := e.CreateUser("root", auth.RoleAdmin)
		teach := e.CreateUser("teach", auth.RoleInstructor)
		other := e.CreateUser("other", auth.RoleInstructor)
		alice := e.CreateUser("alice", auth.RoleStudent)
		bob := e.CreateUser("bob", auth.RoleStudent)
		carol := e.CreateUser("carol", auth.RoleStudent)

		// Creating: instructors and admins only; a name is required.
		post(e, alice.Token, "/api/classes", map[string]any{"name": "Mine"}).Expect(t, 403)
		for _, bad := range []map[string]any{{}, {"name": "  "}, {"name": strings.Repeat("x", 101)}} {
			r := post(e, teach.Token, "/api/classes", bad).Expect(t, 422)
			if l := locs(t, r); len(l) != 1 || l[0] != "body.name" {
				t.Fatalf("422 at %v for %v", l, bad)
			}
		}
		c := createClass(t, e, teach.Token, "  Linux 101 ")
		if c.Name != "Linux 101" || c.Role != "teacher" || c.Teacher != "teach" || c.JoinCode == nil || !joinCode.MatchString(*c.JoinCode) ||
			c.LearnerCount == nil || *c.LearnerCount != 0 {
			t.Fatalf("created %+v", c)
		}
		otherClass := createClass(t, e, other.Token, "Other's")
		classPath := fmt.Sprintf("/api/classes/%d", c.ID)

		// Joining: case, spaces and dashes do not matter; twice is 200.
		code := *c.JoinCode
		typed := strings.ToLower(code[:4]) + "-" + code[4:]
		if j := joinClass(t, e, alice.Token, typed, 201); j.ID != c.ID || j.Role != "learner" || j.JoinCode != nil || j.LearnerCount != nil || j.Teacher != "teach" {
			t.Fatalf("joined %+v", j)
		}
		joinClass(t, e, alice.Token, code, 200)
		joinClass(t, e, bob.Token, code, 201)
		joinClass(t, e, teach.Token, code, 409)
		joinClass(t, e, carol.Token, "ZZZZZZZZ", 404)
		post(e, carol.Token, "/api/classes/join", map[string]any{}).Expect(t, 422)

		// Lists: the teacher's with the code, a learner's without.
		var list []classBody
		e.Get("/api/classes", teach.Token).Expect(t, 200).JSON(t, &list)
		if len(list) != 1 || list[0].ID != c.ID || *list[0].LearnerCount != 2 {
			t.Fatalf("teacher's list %+v", list)
		}
		e.Get("/api/classes", alice.Token).Expect(t, 200).JSON(t, &list)
		if len(list) != 1 || list[0].Role != "learner" || list[0].JoinCode != nil || list[0].LearnerCount != nil {
			t.Fatalf("learner's list %+v", list)
		}
		e.Get("/api/classes", carol.Token).Expect(t, 200).JSON(t, &list)
		if len(list) != 0 {
			t.Fatalf("outsider's list %+v", list)
		}
		e.Get("/api/classes", admin.Token).Expect(t, 200).JSON(t, &list)
		if len(list) != 2 {
			t.Fatalf("admin's list %+v", list)
		}

		// One class, as each caller may see it.
		e.Get(classPath, alice.Token).Expect(t, 200)
		e.Get(classPath, teach.Token).Expect(t, 200)
		e.Get(classPath, carol.Token).Expect(t, 404)
		e.Get(classPath, other.Token).Expect(t, 404)
		e.Get("/api/classes/999999", teach.Token).Expect(t, 404)

		// Real progress: alice completes a theme and submits an exam.
		post(e, alice.Token, fmt.Sprintf("/api/lessons/themes/%d/complete", ids["shell-pwd"]), nil).Expect(t, 200)
		ex := createExam(t, e, admin, "slug=perms&title=Permissions&time_limit_minutes=20&passing_score=50", fixtureExamBody())
		at := startExam(t, e, alice.Token, ex.ID)
		post(e, alice.Token, fmt.Sprintf("/api/exams/%d/submit", ex.ID), map[string]any{"answers": []map[string]any{
			{"question_id": ex.Questions[0].ID, "choice": at.shown(t, ex.Questions[0].ID, "/etc/shadow")}}}).Expect(t, 200)

		// The learners view: the teacher and admins; students 403; others 404.
		learners := fmt.Sprintf("/api/classes/%d/learners", c.ID)
		e.Get(learners, alice.Token).Expect(t, 403)
		e.Get(learners, other.Token).Expect(t, 404)
		e.Get(fmt.Sprintf("/api/classes/%d/learners", otherClass.ID), teach.Token).Expect(t, 404)
		e.Get(learners+"?sort=age", teach.Token).Expect(t, 422)
		e.Get(learners+"?days=0", teach.Token).Expect(t, 422)
		ls := learnersOf(t, e, teach.Token, c.ID, "")
		if !slices.Equal(usernames(ls), []string{"alice", "bob"}) {
			t.Fatalf("learners %v", usernames(ls))
		}
		a, b := ls[0], ls[1]
		if a.Progress.Completed != 1 || a.Progress.Total != 3 || a.Progress.Percent != 33 || len(a.Modules) != 2 ||
			a.Modules[0].ModuleID != ids["shell"] || a.Modules[0].Completed != 1 || a.Modules[0].Percent != 50 {
			t.Fatalf("alice's progress %+v", a)
		}
		if len(a.Exams) != 1 || a.Exams[0].ExamID != ex.ID || a.Exams[0].Status != "submitted" || a.Exams[0].Score != 50 || !a.Exams[0].Passed ||
			a.Exams[0].FinishedAt == nil {
			t.Fatalf("alice's exams %+v", a.Exams)
		}
		if a.Activity.Days != 7 || a.Activity.Events < 3 || a.Activity.LastActiveAt == nil {
			t.Fatalf("alice's activity %+v", a.Activity)
		}
		if b.Progress.Completed != 0 || len(b.Exams) != 0 || len(b.Labs) != 0 || b.Activity.Events != 0 || b.Activity.LastActiveAt != nil {
			t.Fatalf("bob %+v", b)
		}
		learnersOf(t, e, admin.Token, c.ID, "")

		// Sorted and paginated.
		if got := usernames(learnersOf(t, e, teach.Token, c.ID, "sort=name&order=desc")); !slices.Equal(got, []string{"bob", "alice"}) {
			t.Fatalf("by name, descending: %v", got)
		}
		if got := usernames(learnersOf(t, e, teach.Token, c.ID, "sort=progress&order=desc")); !slices.Equal(got, []string{"alice", "bob"}) {
			t.Fatalf("by progress, descending: %v", got)
		}
		if got := usernames(learnersOf(t, e, teach.Token, c.ID, "sort=last_active")); !slices.Equal(got, []string{"bob", "alice"}) {
			t.Fatalf("by last activity: %v", got)
		}
		r := e.Get(learners+"?page=2&page_size=1", teach.Token).Expect(t, 200)
		var page []learnerBody
		r.JSON(t, &page)
		if r.Header.Get("X-Total-Count") != "2" || len(page) != 1 || page[0].Username != "bob" {
			t.Fatalf("page 2: %s %s", r.Header.Get("X-Total-Count"), r.Body)
		}

		// Assignments: the teacher sets them; learners see them on their dashboard.
		labID := createLab(t, e, admin, fmt.Sprintf("slug=hello-lab&title=Hello&module_id=%d&template_id=%d&time_limit_minutes=30", ids["shell"], busyboxTemplate(t, e)), fixtureLabBody())
		assignments := fmt.Sprintf("/api/classes/%d/assignments", c.ID)
		due := time.Now().UTC().Add(7 * 24 * time.Hour).Format(time.RFC3339)
		post(e, alice.Token, assignments, map[string]any{"kind": "exam", "item_id": ex.ID, "due_at": due}).Expect(t, 403)
		post(e, other.Token, assignments, map[string]any{"kind": "exam", "item_id": ex.ID, "due_at": due}).Expect(t, 404)
		for _, bad := range []struct {
			body map[string]any
			loc  string
		}{
			{map[string]any{"kind": "exam", "item_id": 999999, "due_at": due}, "body.item_id"},
			{map[string]any{"kind": "lab", "item_id": ex.ID + labID + 1000, "due_at": due}, "body.item_id"},
			{map[string]any{"kind": "exam", "item_id": ex.ID, "due_at": "2001-01-01T00:00:00Z"}, "body.due_at"},
			{map[string]any{"kind": "exam", "item_id": ex.ID, "due_at": "next friday"}, "body.due_at"},
			{map[string]any{"kind": "theme", "item_id": ex.ID, "due_at": due}, "body.kind"},
			{map[string]any{"item_id": ex.ID, "due_at": due}, "body.kind"},
		} {
			r := post(e, teach.Token, assignments, bad.body).Expect(t, 422)
			if l := locs(t, r); len(l) != 1 || l[0] != bad.loc {
				t.Fatalf("%v: 422 at %v, want %s", bad.body, l, bad.loc)
			}
		}
		var examAssignment struct {
			ID    int64  `json:"id"`
			Title string `json:"title"`
			Kind  string `json:"kind"`
		}
		post(e, teach.Token, assignments, map[string]any{"kind": "exam", "item_id": ex.ID, "due_at": due}).Expect(t, 201).JSON(t, &examAssignment)
		if examAssignment.Title != "Permissions" || examAssignment.Kind != "exam" {
			t.Fatalf("assignment %+v", examAssignment)
		}
		post(e, teach.Token, assignments, map[string]any{"kind": "exam", "item_id": ex.ID, "due_at": due}).Expect(t, 409)
		post(e, teach.Token, assignments, map[string]any{"kind": "lab", "item_id": labID, "due_at": due}).Expect(t, 201)
		var as []learnerAssignmentBody
		e.Get(assignments, alice.Token).Expect(t, 200).JSON(t, &as)
		if len(as) != 2 {
			t.Fatalf("assignments %+v", as)
		}
		e.Get(assignments, carol.Token).Expect(t, 404)
		e.Get(assignments, other.Token).Expect(t, 404)
		e.Get("/api/dashboard/assignments", alice.Token).Expect(t, 200).JSON(t, &as)
		byKind := map[string]learnerAssignmentBody{}
		for _, x := range as {
			byKind[x.Kind] = x
		}
		if len(as) != 2 || !byKind["exam"].Done || !byKind["exam"].Passed || byKind["exam"].ClassName != "Linux 101" ||
			byKind["lab"].Done || byKind["lab"].Overdue || byKind["lab"].Title != "Hello" {
			t.Fatalf("alice's dashboard %+v", as)
		}
		e.Get("/api/dashboard/assignments", bob.Token).Expect(t, 200).JSON(t, &as)
		if len(as) != 2 || as[0].Done || as[1].Done {
			t.Fatalf("bob's dashboard %+v", as)
		}
		e.Get("/api/dashboard/assignments", carol.Token).Expect(t, 200).JSON(t, &as)
		if len(as) != 0 {
			t.Fatalf("carol's dashboard %+v", as)
		}
		del(e, other.Token, fmt.Sprintf("%s/%d", assignments, examAssignment.ID)).Expect(t, 404)
		del(e, teach.Token, fmt.Sprintf("%s/%d", assignments, examAssignment.ID)).Expect(t, 200)
		del(e, teach.Token, fmt.Sprintf("%s/%d", assignments, examAssignment.ID)).Expect(t, 404)

		// A new code: the old one stops working.
		var rotated classBody
		post(e, alice.Token, classPath+"/code", nil).Expect(t, 403)
		post(e, other.Token, classPath+"/code", nil).Expect(t, 404)
		post(e, teach.Token, classPath+"/code", nil).Expect(t, 200).JSON(t, &rotated)
		if rotated.JoinCode == nil || *rotated.JoinCode == code || !joinCode.MatchString(*rotated.JoinCode) {
			t.Fatalf("rotated %+v, was %s", rotated, code)
		}
		joinClass(t, e, carol.Token, code, 404)
		joinClass(t, e, carol.Token, *rotated.JoinCode, 201)

		// Removing and leaving: only members, only of classes one sees.
		del(e, teach.Token, fmt.Sprintf("%s/learners/%d", classPath, other.ID)).Expect(t, 404)
		del(e, other.Token, fmt.Sprintf("%s/learners/%d", classPath, carol.ID)).Expect(t, 404)
		del(e, teach.Token, fmt.Sprintf("%s/learners/%d", classPath, carol.ID)).Expect(t, 200)
		del(e, alice.Token, classPath+"/membership").Expect(t, 200)
		del(e, alice.Token, classPath+"/membership").Expect(t, 404)
		e.Get(classPath, alice.Token).Expect(t, 404)
		if got := usernames(learnersOf(t, e, teach.Token, c.ID, "")); !slices.Equal(got, []string{"bob"}) {
			t.Fatalf("after leaving: %v", got)
		}

		// Deleting the laboratory deletes its assignment.
		e.Get(assignments, bob.Token).Expect(t, 200).JSON(t, &as)
		if len(as) != 1 || as[0].Kind != "lab" {
			t.Fatalf("assignments before deleting the lab %+v", as)
		}
		del(e, admin.Token, fmt.Sprintf("/api/admin/laboratories/%d", labID)).Expect(t, 200)
		e.Get(assignments, bob.Token).Expect(t, 200).JSON(t, &as)
		if len(as) != 0 {
			t.Fatalf("assignments after deleting the lab %+v", as)
		}

		// Deleting: the owner or an admin.
		del(e, other.Token, classPath).Expect(t, 404)
		del(e, bob.Token, classPath).Expect(t, 403)
		del(e, teach.Token, classPath).Expect(t, 200)
		e.Get(classPath, bob.Token).Expect(t, 404)
		del(e, admin.Token, fmt.Sprintf("/api/classes/%d", otherClass.ID)).Expect(t, 200)
	})
}

// TestClassLearnersCSV: the export has a header and one row per learner,
// and a cell that a spreadsheet would run as a formula is made text.
func TestClassLearnersCSV(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ids := loadFixture(t, e)
		teach := e.CreateUser("teach", auth.RoleInstructor)
		alice := e.CreateUser("alice", auth.RoleStudent)
		// Usernames made straight in the store, past registration's rules.
		evil := e.CreateUser("=HYPERLINK(\"http://x.invalid\")", auth.RoleStudent)
		plus := e.CreateUser("+1+2", auth.RoleStudent)
		c := createClass(t, e, teach.Token, "CSV")
		for _, u := range []*apitest.User{alice, evil, plus} {
			joinClass(t, e, u.Token, *c.JoinCode, 201)
		}
		post(e, alice.Token, fmt.Sprintf("/api/lessons/themes/%d/complete", ids["files-cat"]), nil).Expect(t, 200)

		path := fmt.Sprintf("/api/classes/%d/learners.csv", c.ID)
		e.Get(path, alice.Token).Expect(t, 403)
		e.Get(fmt.Sprintf("/api/classes/%d/learners.csv", c.ID+1000), teach.Token).Expect(t, 404)
		r := e.Get(path+"?sort=progress&order=desc", teach.Token).Expect(t, 200)
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
			t.Fatalf("content type %q", ct)
		}
		rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
		if err != nil {
			t.Fatalf("not CSV: %v\n%s", err, r.Body)
		}
		if len(rows) != 4 || rows[0][0] != "username" || !slices.Contains(rows[0], "progress_percent") {
			t.Fatalf("rows %q", rows)
		}
		col := slices.Index(rows[0], "themes_completed")
		if rows[1][0] != "alice" || rows[1][col] != "1" {
			t.Fatalf("first row %q", rows[1])
		}
		var names []string
		for _, row := range rows[1:] {
			names = append(names, row[0])
		}
		want := []string{"alice", "'+1+2", "'=HYPERLINK(\"http://x.invalid\")"}
		if !slices.Equal(names, want) {
			t.Fatalf("usernames in the CSV %q, want %q", names, want)
		}
	})
}

// TestClassJoinRateLimit: wrong codes are refused as 404 until the user's
// join attempts run out, then 429 with Retry-After, even for a right code.
func TestClassJoinRateLimit(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		teach := e.CreateUser("teach", auth.RoleInstructor)
		mallory := e.CreateUser("mallory", auth.RoleStudent)
		alice := e.CreateUser("alice", auth.RoleStudent)
		c := createClass(t, e, teach.Token, "Guarded")
		for i := range 10 {
			joinClass(t, e, mallory.Token, fmt.Sprintf("AAAAAA%02d", i), 404)
		}
		r := post(e, mallory.Token, "/api/classes/join", map[string]any{"code": *c.JoinCode}).Expect(t, 429)
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
		joinClass(t, e, alice.Token, *c.JoinCode, 201) // per user: others are not held up
	}, func(cfg *config.Config) { cfg.RateLimitNow = func() time.Time { return now } })
}

// TestClassLabResults: the learners view shows a lab attempt's per-task
// results, and never a check script, its output or its feedback.
func TestClassLabResults(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		teach := e.CreateUser("teach", auth.RoleInstructor)
		mod := loadFixture(t, e)["shell"]
		labID := createLab(t, e, admin, fmt.Sprintf("slug=hello-lab&title=Hello&module_id=%d&template_id=%d&time_limit_minutes=30", mod, busyboxTemplate(t, e)), fixtureLabBody())
		c := createClass(t, e, teach.Token, "Labs")
		joinClass(t, e, alice.Token, *c.JoinCode, 201)

		var at labAttemptBody
		post(e, alice.Token, fmt.Sprintf("/api/laboratories/%d/start", labID), nil).Expect(t, 201).JSON(t, &at)
		t.Cleanup(func() { e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), *at.ContainerID) })
		// Solve the first task only: the third fails with feedback.
		execIn(t, e, alice.ID, *at.ContainerID, sandbox.Script{Text: "echo 'hello tuxlab' > ~/hello.txt"})
		post(e, alice.Token, fmt.Sprintf("/api/laboratories/%d/submit", labID), nil).Expect(t, 200)

		r := e.Get(fmt.Sprintf("/api/classes/%d/learners", c.ID), teach.Token).Expect(t, 200)
		for _, secret := range []string{"lab-check-secret", "FAIL", "there is no projects directory", "output", "exit_code", "feedback", "lab-solution-secret"} {
			if strings.Contains(string(r.Body), secret) {
				t.Fatalf("the learners view shows %q: %s", secret, r.Body)
			}
		}
		var ls []learnerBody
		r.JSON(t, &ls)
		if len(ls) != 1 || len(ls[0].Labs) != 1 {
			t.Fatalf("learners %s", r.Body)
		}
		l := ls[0].Labs[0]
		if l.LabID != labID || l.Status != "submitted" || l.Score != 75 || len(l.Tasks) != 3 ||
			!l.Tasks[0].Passed || l.Tasks[0].Points != 2 || !l.Tasks[1].Passed || l.Tasks[2].Passed || l.Tasks[2].Title != "Make a projects directory" {
			t.Fatalf("lab attempt %+v", l)
		}
		csvBody := string(e.Get(fmt.Sprintf("/api/classes/%d/learners.csv", c.ID), teach.Token).Expect(t, 200).Body)
		if !strings.Contains(csvBody, "Hello: 75") {
			t.Fatalf("CSV without the lab's best score:\n%s", csvBody)
		}
	})
}

// TestClassLimits: an instructor has at most class.MaxClassesPerOwner
// classes, also when the last ones are asked for at once (the owner's row
// is locked while counting).
func TestClassLimits(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		teach := e.CreateUser("teach", auth.RoleInstructor)
		other := e.CreateUser("other", auth.RoleInstructor)
		for i := range class.MaxClassesPerOwner - 3 {
			createClass(t, e, teach.Token, fmt.Sprintf("Class %d", i))
		}
		reqs := make([]apitest.Request, 8)
		for i := range reqs {
			reqs[i] = apitest.Request{Method: "POST", Path: "/api/classes", Token: teach.Token, Body: map[string]any{"name": fmt.Sprintf("Late %d", i)}}
		}
		got := statusesOf(e.DoConcurrently(reqs))
		slices.Sort(got)
		if want := []int{201, 201, 201, 409, 409, 409, 409, 409}; !slices.Equal(got, want) {
			t.Fatalf("concurrent creations past the limit answered %v, want %v", got, want)
		}
		var list []classBody
		e.Get("/api/classes", teach.Token).Expect(t, 200).JSON(t, &list)
		if len(list) != class.MaxClassesPerOwner {
			t.Fatalf("%d classes, want %d", len(list), class.MaxClassesPerOwner)
		}
		createClass(t, e, other.Token, "Another instructor's") // the limit is per owner
	})
}
