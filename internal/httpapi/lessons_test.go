package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"tuxlab/content"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
)

// fixture is a small curriculum: modules in reverse file order to check that
// order comes from front matter, not from names.
func fixture(extra map[string]string) fstest.MapFS {
	files := map[string]string{
		"b/module.md": "---\nslug: shell\ntitle: The shell\norder: 1\n---\nFirst steps.\n",
		"b/01.md":     "---\nslug: shell-pwd\ntitle: Where am I\norder: 1\nestimated_minutes: 5\n---\n# Where am I\n\n```console\n$ pwd\n/home/learner\n```\n",
		"b/02.md":     "---\nslug: shell-ls\ntitle: Listing\norder: 2\nestimated_minutes: 7\n---\n# Listing\n\nUse `ls`.\n\n<script>alert('stolen')</script>\n\n[x](javascript:alert(1))\n",
		"a/module.md": "---\nslug: files\ntitle: Files\norder: 2\n---\nFiles and text.\n",
		"a/01.md":     "---\nslug: files-cat\ntitle: cat\norder: 1\nestimated_minutes: 9\n---\n# cat\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	fs := fstest.MapFS{}
	for k, v := range files {
		fs[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return fs
}

type moduleBody struct {
	ID          int64  `json:"id"`
	Slug        string `json:"slug"`
	Title       string `json:"title"`
	Name        string `json:"name"`
	Description string `json:"description"`
	OrderIndex  int    `json:"order_index"`
	Themes      []struct {
		ID        int64  `json:"id"`
		Slug      string `json:"slug"`
		Title     string `json:"title"`
		Completed bool   `json:"completed"`
	} `json:"themes"`
	Progress struct{ Completed, Total int } `json:"progress"`
}

type themeBody struct {
	ID              int64   `json:"id"`
	ModuleID        int64   `json:"module_id"`
	Title           string  `json:"title"`
	Completed       bool    `json:"completed"`
	CompletedAt     *string `json:"completed_at"`
	PreviousThemeID *int64  `json:"previous_theme_id"`
	NextThemeID     *int64  `json:"next_theme_id"`
	EstimatedMin    int     `json:"estimated_minutes"`
}

func loadFixture(t *testing.T, e *apitest.Env) map[string]int64 {
	t.Helper()
	if _, err := e.App.Lessons.Import(context.Background(), fixture(nil), nil); err != nil {
		t.Fatal(err)
	}
	modules, _, err := e.App.Lessons.Modules(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	for _, m := range modules {
		ids[m.Slug] = m.ID
		for _, th := range m.Themes {
			ids[th.Slug] = th.ID
		}
	}
	return ids
}

func modules(t *testing.T, e *apitest.Env, token string) []moduleBody {
	t.Helper()
	var ms []moduleBody
	e.Get("/api/lessons/modules", token).Expect(t, 200).JSON(t, &ms)
	return ms
}

func TestLessonsReadAndProgress(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ids := loadFixture(t, e)
		u := e.CreateUser("learner", auth.RoleStudent)
		other := e.CreateUser("other", auth.RoleStudent)

		ms := modules(t, e, u.Token)
		if len(ms) != 2 || ms[0].Slug != "shell" || ms[1].Slug != "files" || ms[0].Name != "The shell" || ms[0].Title != "The shell" {
			t.Fatalf("modules = %+v", ms)
		}
		if len(ms[0].Themes) != 2 || ms[0].Themes[0].Slug != "shell-pwd" || ms[0].Themes[1].Slug != "shell-ls" || ms[0].Progress.Total != 2 || ms[0].Progress.Completed != 0 {
			t.Fatalf("themes of shell = %+v", ms[0])
		}

		// Completing is idempotent: 200 twice, recorded once with its first time.
		path := fmt.Sprintf("/api/lessons/themes/%d/complete", ids["shell-ls"])
		var c1, c2 struct {
			CompletedAt string `json:"completed_at"`
		}
		e.Do(apitest.Request{Method: "POST", Path: path, Token: u.Token}).Expect(t, 200).JSON(t, &c1)
		e.Do(apitest.Request{Method: "POST", Path: path, Token: u.Token}).Expect(t, 200).JSON(t, &c2)
		if c1.CompletedAt == "" || c1 != c2 {
			t.Fatalf("completion times %v then %v", c1, c2)
		}
		if st, _ := e.App.Lessons.Stats(context.Background()); st.Completions != 1 {
			t.Fatalf("%d completions recorded", st.Completions)
		}
		ms = modules(t, e, u.Token)
		if ms[0].Progress.Completed != 1 || !ms[0].Themes[1].Completed || ms[0].Themes[0].Completed {
			t.Fatalf("progress after completion = %+v", ms[0])
		}
		// Progress is per user.
		if ms := modules(t, e, other.Token); ms[0].Progress.Completed != 0 {
			t.Fatalf("other user's progress = %+v", ms[0].Progress)
		}

		// A theme knows its module, its neighbours across modules and its completion.
		var th themeBody
		e.Get(fmt.Sprintf("/api/lessons/themes/%d", ids["shell-ls"]), u.Token).Expect(t, 200).JSON(t, &th)
		if th.ModuleID != ids["shell"] || !th.Completed || th.CompletedAt == nil || *th.CompletedAt != c1.CompletedAt ||
			th.PreviousThemeID == nil || *th.PreviousThemeID != ids["shell-pwd"] || th.NextThemeID == nil || *th.NextThemeID != ids["files-cat"] {
			t.Fatalf("theme = %+v", th)
		}
		e.Get(fmt.Sprintf("/api/lessons/themes/%d", ids["shell-pwd"]), u.Token).Expect(t, 200).JSON(t, &th)
		if th.PreviousThemeID != nil || th.Completed || th.CompletedAt != nil {
			t.Fatalf("first theme = %+v", th)
		}
	})
}

func TestLessonContentIsSanitised(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ids := loadFixture(t, e)
		u := e.CreateUser("learner", auth.RoleStudent)
		var c struct {
			ThemeID  int64  `json:"theme_id"`
			Format   string `json:"format"`
			Markdown string `json:"markdown"`
			HTML     string `json:"html"`
		}
		e.Get(fmt.Sprintf("/api/lessons/themes/%d/content", ids["shell-ls"]), u.Token).Expect(t, 200).JSON(t, &c)
		if c.Format != "markdown" || !strings.Contains(c.Markdown, "<script>") {
			t.Fatalf("markdown source not returned as written: %+v", c)
		}
		if strings.Contains(c.HTML, "<script") || strings.Contains(c.HTML, "alert(") || strings.Contains(c.HTML, "javascript:") {
			t.Fatalf("unsafe HTML reached the client: %s", c.HTML)
		}
		if !strings.Contains(c.HTML, "<code>ls</code>") {
			t.Fatalf("rendered HTML lost the lesson: %s", c.HTML)
		}
		// The same holds for content an admin writes.
		root := e.CreateUser("root", auth.RoleAdmin)
		e.Do(apitest.Request{Method: "PUT", Path: fmt.Sprintf("/api/admin/lessons/themes/%d/content", ids["shell-pwd"]), Token: root.Token,
			Header: http.Header{"Content-Type": {"text/markdown"}}, Body: "# New\n\n<img src=x onerror=alert(1)><script>steal()</script>\n"}).Expect(t, 200).JSON(t, &c)
		if strings.Contains(c.HTML, "onerror") || strings.Contains(c.HTML, "<script") || !strings.Contains(c.HTML, `<h1 id="new">New</h1>`) {
			t.Fatalf("admin content HTML: %s", c.HTML)
		}
	})
}

func TestLessonErrors(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		loadFixture(t, e)
		u := e.CreateUser("learner", auth.RoleStudent)
		tests := []struct {
			name, method, path string
			token              string
			status             int
			detail             string
		}{
			{"unknown theme", "GET", "/api/lessons/themes/99999", u.Token, 404, "Theme not found"},
			{"unknown theme content", "GET", "/api/lessons/themes/99999/content", u.Token, 404, "Theme not found"},
			{"complete unknown theme", "POST", "/api/lessons/themes/99999/complete", u.Token, 404, "Theme not found"},
			{"non-integer theme id", "GET", "/api/lessons/themes/ls", u.Token, 422, ""},
			{"no token on modules", "GET", "/api/lessons/modules", "", 401, "Not authenticated"},
			{"no token on theme", "GET", "/api/lessons/themes/1", "", 401, "Not authenticated"},
			{"no token on content", "GET", "/api/lessons/themes/1/content", "", 401, "Not authenticated"},
			{"no token on complete", "POST", "/api/lessons/themes/1/complete", "", 401, "Not authenticated"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := e.Do(apitest.Request{Method: tt.method, Path: tt.path, Token: tt.token}).Expect(t, tt.status)
				if tt.detail != "" && r.Detail() != tt.detail {
					t.Fatalf("detail %q, want %q", r.Detail(), tt.detail)
				}
			})
		}
		if got := locs(t, e.Get("/api/lessons/themes/ls", u.Token)); strings.Join(got, ",") != "path.theme_id" {
			t.Fatalf("locs %v", got)
		}
	})
}

func TestAdminLessonAuthoring(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ids := loadFixture(t, e)
		root := e.CreateUser("root", auth.RoleAdmin)
		do := func(method, path string, body any, header http.Header) *apitest.Response {
			return e.Do(apitest.Request{Method: method, Path: path, Token: root.Token, Body: body, Header: header})
		}

		// The contract's module update, with query parameters only.
		var m moduleBody
		do("PUT", fmt.Sprintf("/api/admin/lessons/modules/%d?name=Shell+basics&description=Start+here&order_index=5", ids["shell"]), nil, nil).Expect(t, 200).JSON(t, &m)
		if m.Name != "Shell basics" || m.Title != "Shell basics" || m.Description != "Start here" || m.OrderIndex != 5 || len(m.Themes) != 2 {
			t.Fatalf("updated module = %+v", m)
		}
		if ms := modules(t, e, root.Token); ms[0].Slug != "files" || ms[1].Slug != "shell" {
			t.Fatalf("order after order_index=5: %s, %s", ms[0].Slug, ms[1].Slug)
		}
		// Only the parameters given change.
		do("PUT", fmt.Sprintf("/api/admin/lessons/modules/%d?order_index=0", ids["shell"]), nil, nil).Expect(t, 200).JSON(t, &m)
		if m.Name != "Shell basics" || m.Description != "Start here" || m.OrderIndex != 0 {
			t.Fatalf("partial update = %+v", m)
		}

		// Create a module and a theme whose lesson comes as the body.
		do("POST", "/api/admin/lessons/modules?name=Networking&description=ip+and+ss&order_index=3", nil, nil).Expect(t, 201).JSON(t, &m)
		if m.Slug != "networking" || len(m.Themes) != 0 {
			t.Fatalf("created module = %+v", m)
		}
		do("POST", "/api/admin/lessons/modules?name=Other&slug=networking", nil, nil).Expect(t, 409)
		var th themeBody
		do("POST", fmt.Sprintf("/api/admin/lessons/themes?module_id=%d&title=Addresses&estimated_minutes=12", m.ID), "# Addresses\n\n`ip addr`\n",
			http.Header{"Content-Type": {"text/markdown"}}).Expect(t, 201).JSON(t, &th)
		if th.ModuleID != m.ID || th.EstimatedMin != 12 {
			t.Fatalf("created theme = %+v", th)
		}
		var c struct{ HTML string }
		e.Get(fmt.Sprintf("/api/lessons/themes/%d/content", th.ID), root.Token).Expect(t, 200).JSON(t, &c)
		if !strings.Contains(c.HTML, "<code>ip addr</code>") {
			t.Fatalf("content = %s", c.HTML)
		}
		// JSON body is accepted too.
		do("PUT", fmt.Sprintf("/api/admin/lessons/themes/%d/content", th.ID), map[string]string{"markdown": "# Routes\n"}, nil).Expect(t, 200)
		// Move the theme to another module, rename it.
		do("PUT", fmt.Sprintf("/api/admin/lessons/themes/%d?module_id=%d&title=IP+addresses", th.ID, ids["files"]), nil, nil).Expect(t, 200).JSON(t, &th)
		if th.ModuleID != ids["files"] || th.Title != "IP addresses" {
			t.Fatalf("moved theme = %+v", th)
		}

		// Reorder the themes of a module and all modules.
		do("PUT", fmt.Sprintf("/api/admin/lessons/modules/%d/order?theme_ids=%d,%d", ids["files"], th.ID, ids["files-cat"]), nil, nil).Expect(t, 200).JSON(t, &m)
		if m.Themes[0].ID != th.ID || m.Themes[1].ID != ids["files-cat"] {
			t.Fatalf("reordered themes = %+v", m.Themes)
		}
		ms := modules(t, e, root.Token)
		order := []string{}
		for i := len(ms) - 1; i >= 0; i-- {
			order = append(order, fmt.Sprint(ms[i].ID))
		}
		var reordered []moduleBody
		do("PUT", "/api/admin/lessons/order?module_ids="+strings.Join(order, ","), nil, nil).Expect(t, 200).JSON(t, &reordered)
		if reordered[0].ID != ms[len(ms)-1].ID || reordered[0].OrderIndex != 1 {
			t.Fatalf("reordered modules = %+v", reordered)
		}

		// Deleting a module with themes needs cascade.
		r := do("DELETE", fmt.Sprintf("/api/admin/lessons/modules/%d", ids["shell"]), nil, nil).Expect(t, 409)
		if !strings.Contains(r.Detail(), "cascade=true") {
			t.Fatalf("detail %q", r.Detail())
		}
		do("DELETE", fmt.Sprintf("/api/admin/lessons/modules/%d?cascade=true", ids["shell"]), nil, nil).Expect(t, 200)
		e.Get(fmt.Sprintf("/api/lessons/themes/%d", ids["shell-pwd"]), root.Token).Expect(t, 404)
		do("DELETE", fmt.Sprintf("/api/admin/lessons/themes/%d", th.ID), nil, nil).Expect(t, 200)
		do("DELETE", fmt.Sprintf("/api/admin/lessons/themes/%d", th.ID), nil, nil).Expect(t, 404)

		tests := []struct {
			name, method, path string
			body               any
			status             int
			locs               string
		}{
			{"empty name", "PUT", fmt.Sprintf("/api/admin/lessons/modules/%d?name=", ids["files"]), nil, 422, "query.name"},
			{"negative order", "PUT", fmt.Sprintf("/api/admin/lessons/modules/%d?order_index=-1", ids["files"]), nil, 422, "query.order_index"},
			{"order not a number", "PUT", fmt.Sprintf("/api/admin/lessons/modules/%d?order_index=first", ids["files"]), nil, 422, "query.order_index"},
			{"long description", "PUT", fmt.Sprintf("/api/admin/lessons/modules/%d?description=%s", ids["files"], strings.Repeat("x", 2001)), nil, 422, "query.description"},
			{"bad slug", "PUT", fmt.Sprintf("/api/admin/lessons/modules/%d?slug=Not+A+Slug", ids["files"]), nil, 422, "query.slug"},
			{"unknown module", "PUT", "/api/admin/lessons/modules/99999?name=x", nil, 404, ""},
			{"module without name", "POST", "/api/admin/lessons/modules?description=x", nil, 422, "query.name"},
			{"theme in unknown module", "POST", "/api/admin/lessons/themes?module_id=99999&title=x", nil, 422, "query.module_id"},
			{"theme without title", "POST", fmt.Sprintf("/api/admin/lessons/themes?module_id=%d", ids["files"]), nil, 422, "query.title"},
			{"theme minutes out of range", "POST", fmt.Sprintf("/api/admin/lessons/themes?module_id=%d&title=x&estimated_minutes=0", ids["files"]), nil, 422, "query.estimated_minutes"},
			{"empty content", "PUT", fmt.Sprintf("/api/admin/lessons/themes/%d/content", ids["files-cat"]), "  ", 422, "body"},
			{"content over 256 KiB", "PUT", fmt.Sprintf("/api/admin/lessons/themes/%d/content", ids["files-cat"]), strings.Repeat("x", 300<<10), 422, "body"},
			{"content for unknown theme", "PUT", "/api/admin/lessons/themes/99999/content", "# x", 404, ""},
			{"theme ids not a permutation", "PUT", fmt.Sprintf("/api/admin/lessons/modules/%d/order?theme_ids=%d,%d", ids["files"], ids["files-cat"], ids["files-cat"]), nil, 422, "query.theme_ids"},
			{"theme ids garbage", "PUT", fmt.Sprintf("/api/admin/lessons/modules/%d/order?theme_ids=a,b", ids["files"]), nil, 422, "query.theme_ids"},
			{"module ids missing one", "PUT", "/api/admin/lessons/order?module_ids=" + fmt.Sprint(ids["files"]), nil, 422, "query.module_ids"},
			{"cascade not boolean", "DELETE", fmt.Sprintf("/api/admin/lessons/modules/%d?cascade=maybe", ids["files"]), nil, 422, "query.cascade"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := do(tt.method, tt.path, tt.body, http.Header{"Content-Type": {"text/markdown"}}).Expect(t, tt.status)
				if tt.locs != "" {
					if got := strings.Join(locs(t, r), ","); got != tt.locs {
						t.Fatalf("locs %s, want %s", got, tt.locs)
					}
				}
			})
		}
		// None of the failures changed anything.
		ms = modules(t, e, root.Token)
		for _, m := range ms {
			if m.Slug == "files" && (m.Name != "Files" || m.Description != "Files and text." || len(m.Themes) != 1) {
				t.Fatalf("a refused edit changed the module: %+v", m)
			}
		}
	})
}

func TestAdminLessonRoutesRefuseStudents(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ids := loadFixture(t, e)
		u := e.CreateUser("learner", auth.RoleStudent)
		for _, rt := range []struct{ method, path string }{
			{"POST", "/api/admin/lessons/modules?name=x"},
			{"PUT", fmt.Sprintf("/api/admin/lessons/modules/%d?name=pwned", ids["shell"])},
			{"DELETE", fmt.Sprintf("/api/admin/lessons/modules/%d?cascade=true", ids["shell"])},
			{"PUT", "/api/admin/lessons/order?module_ids=1"},
			{"PUT", fmt.Sprintf("/api/admin/lessons/modules/%d/order?theme_ids=1", ids["shell"])},
			{"POST", fmt.Sprintf("/api/admin/lessons/themes?module_id=%d&title=x", ids["shell"])},
			{"PUT", fmt.Sprintf("/api/admin/lessons/themes/%d?title=pwned", ids["shell-ls"])},
			{"PUT", fmt.Sprintf("/api/admin/lessons/themes/%d/content", ids["shell-ls"])},
			{"DELETE", fmt.Sprintf("/api/admin/lessons/themes/%d", ids["shell-ls"])},
		} {
			r := e.Do(apitest.Request{Method: rt.method, Path: rt.path, Token: u.Token, Body: "# pwned"}).Expect(t, http.StatusForbidden)
			if r.Detail() != "Instructor or admin access required" {
				t.Fatalf("%s %s: detail %q", rt.method, rt.path, r.Detail())
			}
		}
		if ms := modules(t, e, u.Token); len(ms) != 2 || ms[0].Name != "The shell" || len(ms[0].Themes) != 2 {
			t.Fatalf("a student changed the curriculum: %+v", ms)
		}
	})
}

func TestImportTwiceKeepsProgress(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ctx := context.Background()
		ids := loadFixture(t, e)
		u := e.CreateUser("learner", auth.RoleStudent)
		e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/lessons/themes/%d/complete", ids["shell-pwd"]), Token: u.Token}).Expect(t, 200)

		r, err := e.App.Lessons.Import(ctx, fixture(nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.ModulesCreated+r.ModulesUpdated+r.ThemesCreated+r.ThemesUpdated != 0 || r.ThemesUnchanged != 3 {
			t.Fatalf("second import changed things: %s", r)
		}
		// An edited file updates its row in place; a new one is added.
		edited := fixture(map[string]string{
			"b/01.md": "---\nslug: shell-pwd\ntitle: Where am I now\norder: 1\nestimated_minutes: 6\n---\n# Where am I now\n",
			"b/03.md": "---\nslug: shell-cd\ntitle: Moving around\norder: 3\nestimated_minutes: 5\n---\n# cd\n",
		})
		if r, err = e.App.Lessons.Import(ctx, edited, nil); err != nil {
			t.Fatal(err)
		}
		if r.ThemesUpdated != 1 || r.ThemesCreated != 1 || r.ThemesUnchanged != 2 || r.ModulesUnchanged != 2 {
			t.Fatalf("edited import: %s", r)
		}
		ms := modules(t, e, u.Token)
		if len(ms[0].Themes) != 3 || ms[0].Themes[0].ID != ids["shell-pwd"] || ms[0].Themes[0].Title != "Where am I now" || !ms[0].Themes[0].Completed {
			t.Fatalf("after re-import: %+v", ms[0])
		}
	})
}

func TestBundledCurriculumLoadsIntoEmptyDatabase(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ctx := context.Background()
		loaded, r, err := e.App.Lessons.ImportIfEmpty(ctx, content.Curriculum())
		if err != nil || !loaded || r.ThemesCreated < 50 || r.ModulesCreated < 10 {
			t.Fatalf("loaded=%v %s %v", loaded, r, err)
		}
		if loaded, _, err := e.App.Lessons.ImportIfEmpty(ctx, content.Curriculum()); loaded || err != nil {
			t.Fatalf("second load: %v %v", loaded, err)
		}
		u := e.CreateUser("learner", auth.RoleStudent)
		ms := modules(t, e, u.Token)
		if len(ms) < 10 || ms[0].Slug != "shell-basics" {
			t.Fatalf("%d modules, first %q", len(ms), ms[0].Slug)
		}
		var c struct{ HTML string }
		e.Get(fmt.Sprintf("/api/lessons/themes/%d/content", ms[0].Themes[0].ID), u.Token).Expect(t, 200).JSON(t, &c)
		if !strings.Contains(c.HTML, `<h2 id="try-it">Try it</h2>`) {
			t.Fatal("first lesson has no Try it section")
		}
		var stats struct {
			Lessons struct{ Modules, Themes int } `json:"lessons"`
		}
		root := e.CreateUser("root", auth.RoleAdmin)
		e.Get("/api/admin/stats", root.Token).Expect(t, 200).JSON(t, &stats)
		if stats.Lessons.Modules != len(ms) || stats.Lessons.Themes < 50 {
			t.Fatalf("stats %+v", stats)
		}
	})
}
