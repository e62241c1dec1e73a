package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
)

// hostileMarkdown is Markdown with what sanitising must remove: a script, an
// event handler, a javascript: link.
const hostileMarkdown = "Use **chmod** and `ls -l`.\n\n<script>alert(1)</script><img src=x onerror=\"alert(2)\">\n\n[click](javascript:alert(3))\n"

// checkRendered fails unless html is the rendering of hostileMarkdown: the
// Markdown rendered, nothing that runs left.
func checkRendered(t *testing.T, what, html string) {
	t.Helper()
	for _, want := range []string{"<strong>chmod</strong>", "<code>ls -l</code>", "<p>"} {
		if !strings.Contains(html, want) {
			t.Errorf("%s: %q lacks %s", what, html, want)
		}
	}
	for _, bad := range []string{"<script", "onerror", "javascript:", "alert("} {
		if strings.Contains(html, bad) {
			t.Errorf("%s: %q keeps %s", what, html, bad)
		}
	}
}

// TestLabMarkdownIsRendered: a lab's description and its tasks' descriptions
// and hints come with their sanitised HTML, to anyone and to admins.
func TestLabMarkdownIsRendered(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin := e.CreateUser("root", auth.RoleAdmin)
		id := createLab(t, e, admin, fmt.Sprintf("slug=md-lab&title=Markdown&template_id=%d", busyboxTemplate(t, e)), map[string]any{
			"description": hostileMarkdown,
			"tasks": []map[string]any{
				{"title": "One", "description": hostileMarkdown, "hint": hostileMarkdown, "check": "true"},
				{"title": "Two", "check": "true"},
			},
		})
		type task struct {
			DescriptionHTML string `json:"description_html"`
			HintHTML        string `json:"hint_html"`
		}
		var lab struct {
			DescriptionHTML string `json:"description_html"`
			Tasks           []task `json:"tasks"`
		}
		for _, path := range []string{fmt.Sprintf("/api/laboratories/%d", id), fmt.Sprintf("/api/admin/laboratories/%d", id)} {
			e.Get(path, admin.Token).Expect(t, 200).JSON(t, &lab)
			checkRendered(t, path+" description_html", lab.DescriptionHTML)
			if len(lab.Tasks) != 2 {
				t.Fatalf("%s: tasks %+v", path, lab.Tasks)
			}
			checkRendered(t, path+" task description_html", lab.Tasks[0].DescriptionHTML)
			checkRendered(t, path+" task hint_html", lab.Tasks[0].HintHTML)
			if lab.Tasks[1] != (task{}) {
				t.Errorf("%s: a task without description or hint renders %+v", path, lab.Tasks[1])
			}
		}
	})
}

// TestExamMarkdownIsRendered: an exam's description and its questions'
// prompts come with their sanitised HTML in the list, the exam, an attempt,
// the admin view and the results; explanations in the admin view and the
// results only.
func TestExamMarkdownIsRendered(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		ex := createExam(t, e, admin, "slug=md-exam&title=Markdown", map[string]any{
			"description": hostileMarkdown,
			"questions": []map[string]any{{"kind": "single_choice", "prompt": hostileMarkdown, "options": []string{"a", "b"}, "answer": 1,
				"explanation": hostileMarkdown}},
		})
		type question struct {
			PromptHTML      string  `json:"prompt_html"`
			ExplanationHTML *string `json:"explanation_html"`
		}
		type examView struct {
			DescriptionHTML string     `json:"description_html"`
			Questions       []question `json:"questions"`
		}
		check := func(what string, v examView, description, explanation bool) {
			t.Helper()
			if description {
				checkRendered(t, what+" description_html", v.DescriptionHTML)
			}
			if len(v.Questions) != 1 {
				t.Fatalf("%s: questions %+v", what, v.Questions)
			}
			checkRendered(t, what+" prompt_html", v.Questions[0].PromptHTML)
			if got := v.Questions[0].ExplanationHTML; explanation != (got != nil) {
				t.Fatalf("%s: explanation_html %v, want one: %v", what, got, explanation)
			} else if got != nil {
				checkRendered(t, what+" explanation_html", *got)
			}
		}
		var list []examView
		e.Get("/api/exams", "").Expect(t, 200).JSON(t, &list)
		if len(list) != 1 {
			t.Fatalf("list %+v", list)
		}
		checkRendered(t, "list description_html", list[0].DescriptionHTML)
		var v examView // emptied before each read: json keeps fields an answer lacks
		e.Get(fmt.Sprintf("/api/exams/%d", ex.ID), "").Expect(t, 200).JSON(t, &v)
		check("exam", v, true, false)
		v = examView{}
		e.Get(fmt.Sprintf("/api/admin/exams/%d", ex.ID), admin.Token).Expect(t, 200).JSON(t, &v)
		check("admin exam", v, true, true)
		at := startExam(t, e, alice.Token, ex.ID)
		v = examView{}
		e.Get(fmt.Sprintf("/api/exams/attempts/%d", at.ID), alice.Token).Expect(t, 200).JSON(t, &v)
		check("attempt", v, false, false)
		v = examView{}
		e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/exams/%d/submit", ex.ID), Token: alice.Token,
			Body: map[string]any{"answers": []any{}}}).Expect(t, 200).JSON(t, &v)
		check("results", v, false, true)
	})
}
