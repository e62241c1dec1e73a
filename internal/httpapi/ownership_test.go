package httpapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
)

// owned is what every authoring response says of an item's owner and state.
type owned struct {
	ID        int64  `json:"id"`
	OwnerID   *int64 `json:"owner_id"`
	Published bool   `json:"published"`
}

// authored holds the ids of one instructor's module, theme, lab and exam.
type authored struct{ module, theme, lab, exam int64 }

// simpleExamBody is an exam with one choice question: it starts without a sandbox.
func simpleExamBody() map[string]any {
	return map[string]any{"questions": []map[string]any{
		{"kind": "single_choice", "prompt": "Which prints the directory?", "options": []string{"ls", "pwd"}, "answer": 1}}}
}

// simpleLabBody is a lab with one task.
func simpleLabBody() map[string]any {
	return map[string]any{"tasks": []map[string]any{{"title": "Anything", "check": "true"}}}
}

// authorAll creates a module, a theme in it, a lab of the module and an exam
// as u, named by prefix, checking that each is u's and a draft unless the
// caller is an admin.
func authorAll(t *testing.T, e *apitest.Env, u *apitest.User, prefix string) authored {
	t.Helper()
	wantPublished := u.Role == auth.RoleAdmin
	check := func(what string, o owned) int64 {
		t.Helper()
		if o.OwnerID == nil || *o.OwnerID != u.ID || o.Published != wantPublished {
			t.Fatalf("%s created by %s: owner %v, published %v", what, u.Username, o.OwnerID, o.Published)
		}
		return o.ID
	}
	var a authored
	var o owned
	post(e, u.Token, "/api/admin/lessons/modules?name="+prefix+"+module", nil).Expect(t, 201).JSON(t, &o)
	a.module = check("module", o)
	e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/admin/lessons/themes?module_id=%d&title=%s+theme", a.module, prefix), Token: u.Token,
		Body: "# " + prefix + " lesson\n\nRun `id`.\n", Header: http.Header{"Content-Type": {"text/markdown"}}}).Expect(t, 201).JSON(t, &o)
	a.theme = check("theme", o)
	post(e, u.Token, fmt.Sprintf("/api/admin/laboratories?slug=%s-lab&title=Lab&module_id=%d&template_id=%d", prefix, a.module, busyboxTemplate(t, e)),
		simpleLabBody()).Expect(t, 201).JSON(t, &o)
	a.lab = check("lab", o)
	post(e, u.Token, "/api/admin/exams?slug="+prefix+"-exam&title=Exam", simpleExamBody()).Expect(t, 201).JSON(t, &o)
	a.exam = check("exam", o)
	return a
}

// idRoute is an authoring route on one item of an author's content.
type idRoute struct {
	method, path string
	body         any
}

// idRoutes lists every authoring route that names an item of a, with a
// harmless change where it takes one.
func idRoutes(a authored) []idRoute {
	return []idRoute{
		{"PUT", fmt.Sprintf("/api/admin/lessons/modules/%d?description=changed", a.module), nil},
		{"PUT", fmt.Sprintf("/api/admin/lessons/modules/%d/order?theme_ids=%d", a.module, a.theme), nil},
		{"POST", fmt.Sprintf("/api/admin/lessons/themes?module_id=%d&title=Intruder", a.module), nil},
		{"PUT", fmt.Sprintf("/api/admin/lessons/themes/%d?title=Changed", a.theme), nil},
		{"PUT", fmt.Sprintf("/api/admin/lessons/themes/%d/content", a.theme), map[string]any{"markdown": "# Changed"}},
		{"GET", fmt.Sprintf("/api/admin/laboratories/%d", a.lab), nil},
		{"PUT", fmt.Sprintf("/api/admin/laboratories/%d?title=Changed", a.lab), nil},
		{"GET", fmt.Sprintf("/api/admin/exams/%d", a.exam), nil},
		{"PUT", fmt.Sprintf("/api/admin/exams/%d?title=Changed", a.exam), nil},
		// Deletes last: an allowed caller removes the items.
		{"DELETE", fmt.Sprintf("/api/admin/lessons/themes/%d", a.theme), nil},
		{"DELETE", fmt.Sprintf("/api/admin/laboratories/%d", a.lab), nil},
		{"DELETE", fmt.Sprintf("/api/admin/exams/%d", a.exam), nil},
		{"DELETE", fmt.Sprintf("/api/admin/lessons/modules/%d?cascade=true", a.module), nil},
	}
}

// TestOwnershipOnEveryIDRoute runs every authoring route that names an item
// against an instructor's content: another instructor gets 403 saying whose
// it is, a student 403, and the owner and an admin succeed.
func TestOwnershipOnEveryIDRoute(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin := e.CreateUser("admin", auth.RoleAdmin)
		ann := e.CreateUser("ann", auth.RoleInstructor)
		bob := e.CreateUser("bob", auth.RoleInstructor)
		student := e.CreateUser("sam", auth.RoleStudent)
		for _, owner := range []*apitest.User{ann, admin} {
			a := authorAll(t, e, ann, "ann"+owner.Username)
			for _, rt := range idRoutes(a) {
				r := e.Do(apitest.Request{Method: rt.method, Path: rt.path, Token: bob.Token, Body: rt.body}).Expect(t, http.StatusForbidden)
				if !strings.Contains(r.Detail(), "another author") {
					t.Errorf("%s %s as another instructor: detail %q", rt.method, rt.path, r.Detail())
				}
				r = e.Do(apitest.Request{Method: rt.method, Path: rt.path, Token: student.Token, Body: rt.body}).Expect(t, http.StatusForbidden)
				if r.Detail() != "Instructor or admin access required" {
					t.Errorf("%s %s as a student: detail %q", rt.method, rt.path, r.Detail())
				}
			}
			// The owner, then an admin, may do every one of them.
			for _, rt := range idRoutes(a) {
				r := e.Do(apitest.Request{Method: rt.method, Path: rt.path, Token: owner.Token, Body: rt.body})
				if r.Status != http.StatusOK && r.Status != http.StatusCreated {
					t.Errorf("%s %s as %s: %d %s", rt.method, rt.path, owner.Username, r.Status, r.Body)
				}
			}
		}
		// Reordering every module moves the system's and the admin's: an
		// instructor may not; an admin may.
		var ms []owned
		e.Get("/api/lessons/modules", admin.Token).Expect(t, 200).JSON(t, &ms)
		post(e, admin.Token, "/api/admin/lessons/modules?name=Admin+module", nil).Expect(t, 201)
		e.Get("/api/lessons/modules", admin.Token).Expect(t, 200).JSON(t, &ms)
		ids := make([]string, len(ms))
		for i, m := range slices.Backward(ms) {
			ids[len(ms)-1-i] = fmt.Sprint(m.ID)
		}
		order := "/api/admin/lessons/order?module_ids=" + strings.Join(ids, ",")
		r := e.Do(apitest.Request{Method: "PUT", Path: order, Token: ann.Token}).Expect(t, http.StatusForbidden)
		if !strings.Contains(r.Detail(), "other authors") {
			t.Errorf("reorder as instructor: %q", r.Detail())
		}
		e.Do(apitest.Request{Method: "PUT", Path: order, Token: admin.Token}).Expect(t, http.StatusOK)
		// An instructor's theme, lab or exam goes only into a module they own.
		r = post(e, ann.Token, fmt.Sprintf("/api/admin/lessons/themes?module_id=%d&title=Mine", ms[0].ID), nil).Expect(t, http.StatusForbidden)
		if !strings.Contains(r.Detail(), "modules you own") {
			t.Errorf("theme in the admin's module: %q", r.Detail())
		}
		r = post(e, ann.Token, fmt.Sprintf("/api/admin/exams?slug=intruder&title=Intruder&module_id=%d", ms[0].ID), simpleExamBody()).Expect(t, http.StatusForbidden)
		if !strings.Contains(r.Detail(), "modules you own") {
			t.Errorf("exam in the admin's module: %q", r.Detail())
		}
		// A deleted author's content falls to the admins.
		kept := authorAll(t, e, ann, "kept")
		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/admin/users/%d", ann.ID), Token: admin.Token}).Expect(t, 200)
		for _, p := range []string{fmt.Sprintf("/api/admin/exams/%d", kept.exam), fmt.Sprintf("/api/admin/laboratories/%d", kept.lab)} {
			var o owned
			e.Get(p, admin.Token).Expect(t, 200).JSON(t, &o)
			if o.OwnerID != nil || o.Published {
				t.Errorf("%s after its owner was deleted: owner %v, published %v", p, o.OwnerID, o.Published)
			}
		}
	})
}

// TestStudentsRefusedOnAuthoringRoutes checks the author gate of every
// authoring route: a student is refused before anything is read.
func TestStudentsRefusedOnAuthoringRoutes(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		student := e.CreateUser("sam", auth.RoleStudent)
		for _, rt := range []idRoute{
			{"POST", "/api/admin/lessons/modules?name=x", nil},
			{"PUT", "/api/admin/lessons/order?module_ids=1", nil},
			{"GET", "/api/admin/laboratories", nil},
			{"POST", "/api/admin/laboratories?slug=x&title=x&template_id=1", simpleLabBody()},
			{"GET", "/api/admin/exams", nil},
			{"POST", "/api/admin/exams?slug=x&title=x", simpleExamBody()},
		} {
			r := e.Do(apitest.Request{Method: rt.method, Path: rt.path, Token: student.Token, Body: rt.body}).Expect(t, http.StatusForbidden)
			if r.Detail() != "Instructor or admin access required" {
				t.Errorf("%s %s: %q", rt.method, rt.path, r.Detail())
			}
		}
		// Admin-only routes stay admin-only for instructors.
		teacher := e.CreateUser("teacher", auth.RoleInstructor)
		for _, p := range []string{"/api/admin/users", "/api/admin/stats", "/api/admin/containers"} {
			if r := e.Get(p, teacher.Token).Expect(t, http.StatusForbidden); r.Detail() != "Admin access required" {
				t.Errorf("%s as instructor: %q", p, r.Detail())
			}
		}
	})
}

// TestDraftsAndPublishing follows an instructor's content from draft to
// published: invisible and 404 to learners, visible and marked to its
// owner, changed by an admin, and seen by everyone once published.
func TestDraftsAndPublishing(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		loadFixture(t, e)
		admin := e.CreateUser("admin", auth.RoleAdmin)
		ann := e.CreateUser("ann", auth.RoleInstructor)
		bob := e.CreateUser("bob", auth.RoleInstructor)
		student := e.CreateUser("sam", auth.RoleStudent)
		a := authorAll(t, e, ann, "ann")
		adminExam := authorAll(t, e, admin, "adm").exam

		hidden := func(who *apitest.User) {
			t.Helper()
			var ms []moduleBody
			e.Get("/api/lessons/modules", who.Token).Expect(t, 200).JSON(t, &ms)
			for _, m := range ms {
				if m.ID == a.module {
					t.Fatalf("%s sees the draft module", who.Username)
				}
			}
			for _, p := range []string{
				fmt.Sprintf("/api/lessons/themes/%d", a.theme),
				fmt.Sprintf("/api/lessons/themes/%d/content", a.theme),
				fmt.Sprintf("/api/laboratories/section/%d/laboratory", a.module),
			} {
				e.Get(p, who.Token).Expect(t, http.StatusNotFound)
			}
			post(e, who.Token, fmt.Sprintf("/api/lessons/themes/%d/complete", a.theme), nil).Expect(t, http.StatusNotFound)
			post(e, who.Token, fmt.Sprintf("/api/exams/%d/start", a.exam), nil).Expect(t, http.StatusNotFound)
			post(e, who.Token, fmt.Sprintf("/api/laboratories/%d/start", a.lab), nil).Expect(t, http.StatusNotFound)
		}
		public := func(wantListed bool) {
			t.Helper()
			e.Get(fmt.Sprintf("/api/exams/%d", a.exam), "").Expect(t, map[bool]int{true: 200, false: 404}[wantListed])
			e.Get(fmt.Sprintf("/api/laboratories/%d", a.lab), "").Expect(t, map[bool]int{true: 200, false: 404}[wantListed])
			var exams, labs []owned
			e.Get("/api/exams", "").Expect(t, 200).JSON(t, &exams)
			e.Get("/api/laboratories", "").Expect(t, 200).JSON(t, &labs)
			if got := slices.ContainsFunc(exams, func(o owned) bool { return o.ID == a.exam }); got != wantListed {
				t.Fatalf("exam listed: %v, want %v", got, wantListed)
			}
			if got := slices.ContainsFunc(labs, func(o owned) bool { return o.ID == a.lab }); got != wantListed {
				t.Fatalf("lab listed: %v, want %v", got, wantListed)
			}
		}
		// progress lists what the caller sees.
		inProgress := func(who *apitest.User) (lab, exam bool) {
			t.Helper()
			var p struct {
				Labs []struct {
					ID int64 `json:"laboratory_id"`
				} `json:"laboratories"`
				Exams []struct {
					ID int64 `json:"exam_id"`
				} `json:"exams"`
			}
			e.Get("/api/progress", who.Token).Expect(t, 200).JSON(t, &p)
			for _, l := range p.Labs {
				lab = lab || l.ID == a.lab
			}
			for _, x := range p.Exams {
				exam = exam || x.ID == a.exam
			}
			return lab, exam
		}
		hidden(student)
		hidden(bob)
		public(false)
		if lab, exam := inProgress(student); lab || exam {
			t.Fatalf("the student's progress lists the draft lab (%v) or exam (%v)", lab, exam)
		}
		if lab, exam := inProgress(ann); !lab || !exam {
			t.Fatalf("the owner's progress lacks her draft lab (%v) or exam (%v)", lab, exam)
		}
		var dash struct {
			Modules []struct{} `json:"modules"`
		}
		e.Get("/api/dashboard/stats", student.Token).Expect(t, 200).JSON(t, &dash)
		if len(dash.Modules) != 3 {
			t.Fatalf("the student's dashboard counts %d modules, want the fixture's 2 and the admin's", len(dash.Modules))
		}

		// The owner sees the draft, marked, and previews the lesson as a student would read it.
		var ms []struct {
			owned
			Themes []owned `json:"themes"`
		}
		e.Get("/api/lessons/modules", ann.Token).Expect(t, 200).JSON(t, &ms)
		i := slices.IndexFunc(ms, func(m struct {
			owned
			Themes []owned `json:"themes"`
		}) bool {
			return m.ID == a.module
		})
		if i < 0 || ms[i].Published || len(ms[i].Themes) != 1 || ms[i].Themes[0].Published {
			t.Fatalf("the owner's view of the draft: %+v", ms)
		}
		var content struct {
			HTML string `json:"html"`
		}
		e.Get(fmt.Sprintf("/api/lessons/themes/%d/content", a.theme), ann.Token).Expect(t, 200).JSON(t, &content)
		if !strings.Contains(content.HTML, "<code>id</code>") {
			t.Fatalf("preview: %q", content.HTML)
		}
		// The authoring lists: an instructor's holds their own only, an admin's everything.
		var list []owned
		e.Get("/api/admin/exams", ann.Token).Expect(t, 200).JSON(t, &list)
		if len(list) != 1 || list[0].ID != a.exam || list[0].Published {
			t.Fatalf("ann's exams: %+v", list)
		}
		e.Get("/api/admin/exams", admin.Token).Expect(t, 200).JSON(t, &list)
		if len(list) != 2 || !slices.ContainsFunc(list, func(o owned) bool { return o.ID == adminExam }) {
			t.Fatalf("the admin's exams: %+v", list)
		}
		// An admin changes the instructor's exam; it stays hers.
		var ex owned
		e.Do(apitest.Request{Method: "PUT", Path: fmt.Sprintf("/api/admin/exams/%d?title=Edited+by+admin", a.exam), Token: admin.Token}).Expect(t, 200).JSON(t, &ex)
		if ex.OwnerID == nil || *ex.OwnerID != ann.ID {
			t.Fatalf("owner after an admin's edit: %v", ex.OwnerID)
		}

		// Publishing makes everything visible to learners.
		for _, p := range []string{
			fmt.Sprintf("/api/admin/lessons/modules/%d?published=true", a.module),
			fmt.Sprintf("/api/admin/lessons/themes/%d?published=true", a.theme),
			fmt.Sprintf("/api/admin/laboratories/%d?published=true", a.lab),
		} {
			var o owned
			e.Do(apitest.Request{Method: "PUT", Path: p, Token: ann.Token}).Expect(t, 200).JSON(t, &o)
			if !o.Published {
				t.Fatalf("PUT %s: still a draft", p)
			}
		}
		// An exam or lab may say it in its body too, but not against the query.
		examPath := fmt.Sprintf("/api/admin/exams/%d", a.exam)
		r := e.Do(apitest.Request{Method: "PUT", Path: examPath + "?published=false", Token: ann.Token, Body: map[string]any{"published": true}}).Expect(t, 422)
		if !strings.Contains(string(r.Body), "published") {
			t.Fatalf("published twice, differently: %s", r.Body)
		}
		e.Do(apitest.Request{Method: "PUT", Path: examPath, Token: ann.Token, Body: map[string]any{"published": true}}).Expect(t, 200).JSON(t, &ex)
		if !ex.Published {
			t.Fatal("the exam's body did not publish it")
		}
		public(true)
		if lab, exam := inProgress(student); !lab || !exam {
			t.Fatalf("the student's progress lacks the published lab (%v) or exam (%v)", lab, exam)
		}
		var sms []moduleBody
		e.Get("/api/lessons/modules", student.Token).Expect(t, 200).JSON(t, &sms)
		if !slices.ContainsFunc(sms, func(m moduleBody) bool { return m.ID == a.module && len(m.Themes) == 1 }) {
			t.Fatalf("the student does not see the published module: %+v", sms)
		}
		e.Get(fmt.Sprintf("/api/lessons/themes/%d/content", a.theme), student.Token).Expect(t, 200)
		post(e, student.Token, fmt.Sprintf("/api/lessons/themes/%d/complete", a.theme), nil).Expect(t, 200)
		post(e, student.Token, fmt.Sprintf("/api/exams/%d/start", a.exam), nil).Expect(t, 201)
		e.Get(fmt.Sprintf("/api/laboratories/section/%d/laboratory", a.module), student.Token).Expect(t, 200)
		e.Get("/api/dashboard/stats", student.Token).Expect(t, 200).JSON(t, &dash)
		if len(dash.Modules) != 4 {
			t.Fatalf("the student's dashboard counts %d modules, want 4", len(dash.Modules))
		}

		// A published theme in a module taken back to draft is hidden again.
		e.Do(apitest.Request{Method: "PUT", Path: fmt.Sprintf("/api/admin/lessons/modules/%d?published=false", a.module), Token: ann.Token}).Expect(t, 200)
		e.Get(fmt.Sprintf("/api/lessons/themes/%d", a.theme), student.Token).Expect(t, http.StatusNotFound)
		// A bad value is a 422 naming the parameter.
		r = e.Do(apitest.Request{Method: "PUT", Path: fmt.Sprintf("/api/admin/lessons/modules/%d?published=maybe", a.module), Token: ann.Token}).Expect(t, 422)
		if !strings.Contains(string(r.Body), "published") {
			t.Fatalf("bad published: %s", r.Body)
		}
	})
}
