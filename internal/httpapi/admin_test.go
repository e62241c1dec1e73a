package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
)

// adminRoutes is every admin route with a valid target, for the role checks.
func adminRoutes(target int64) []apitest.Request {
	id := fmt.Sprint(target)
	return []apitest.Request{
		{Method: "GET", Path: "/api/admin/users"},
		{Method: "POST", Path: "/api/admin/users?username=newbie&email=newbie@tuxlab.org&password=long+enough+pw&role=student"},
		{Method: "PUT", Path: "/api/admin/users/" + id + "/role?role=admin"},
		{Method: "PUT", Path: "/api/admin/users/" + id + "/active?is_active=false"},
		{Method: "DELETE", Path: "/api/admin/users/" + id},
		{Method: "GET", Path: "/api/admin/stats"},
	}
}

func TestAdminRoutesRefuseNonAdmins(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		student := e.CreateUser("student1", auth.RoleStudent)
		instructor := e.CreateUser("teacher1", auth.RoleInstructor)
		victim := e.CreateUser("victim", auth.RoleStudent)
		for _, caller := range []*apitest.User{student, instructor} {
			for _, req := range adminRoutes(victim.ID) {
				t.Run(string(caller.Role)+" "+req.Method+" "+req.Path, func(t *testing.T) {
					req.Token = caller.Token
					if r := e.Do(req).Expect(t, http.StatusForbidden); r.Detail() != "Admin access required" {
						t.Fatalf("detail %q", r.Detail())
					}
				})
			}
		}
		for _, req := range adminRoutes(victim.ID) {
			e.Do(req).Expect(t, http.StatusUnauthorized)
		}
		// Nothing changed.
		var me userBody
		e.Get("/api/auth/me", victim.Token).Expect(t, 200).JSON(t, &me)
		if me.Role != "student" || !me.IsActive {
			t.Fatalf("victim changed: %+v", me)
		}
	})
}

func TestAdminUserManagement(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		root := e.CreateUser("root", auth.RoleAdmin)
		do := func(method, path string) *apitest.Response {
			return e.Do(apitest.Request{Method: method, Path: path, Token: root.Token})
		}

		var created userBody
		do("POST", "/api/admin/users?username=tutor&email=tutor@tuxlab.org&password=long+enough+pw&role=instructor").Expect(t, http.StatusCreated).JSON(t, &created)
		if created.Role != "instructor" || created.Username != "tutor" {
			t.Fatalf("created %+v", created)
		}
		login(e, "tutor", "long enough pw").Expect(t, 200)

		// The same as a JSON body, which keeps the password out of the URL.
		e.Do(apitest.Request{Method: "POST", Path: "/api/admin/users", Token: root.Token,
			Body: map[string]string{"username": "mentor", "email": "mentor@tuxlab.org", "password": "another long pw"}}).Expect(t, http.StatusCreated).JSON(t, &created)
		if created.Role != "student" || created.Username != "mentor" {
			t.Fatalf("created from a body %+v", created)
		}
		login(e, "mentor", "another long pw").Expect(t, 200)
		rb := e.Do(apitest.Request{Method: "POST", Path: "/api/admin/users", Token: root.Token,
			Body: map[string]string{"username": "x", "email": "nobody@example.com"}}).Expect(t, http.StatusUnprocessableEntity)
		if got := locs(t, rb); len(got) != 1 || got[0] != "body.password" {
			t.Fatalf("missing password at %v", got)
		}
		rb = e.Do(apitest.Request{Method: "POST", Path: "/api/admin/users", Token: root.Token,
			Body: map[string]string{"username": "shorty", "email": "nobody@example.com", "password": "long enough pw"}}).Expect(t, http.StatusUnprocessableEntity)
		if got := locs(t, rb); len(got) == 0 || got[0] != "body.email" {
			t.Fatalf("a bad e-mail at %v", got)
		}
		if r := do("POST", "/api/admin/users?username=tutor&email=tutor2@tuxlab.org&password=long+enough+pw").Expect(t, http.StatusConflict); r.Detail() != "Username already registered" {
			t.Fatalf("detail %q", r.Detail())
		}
		r := do("POST", "/api/admin/users?username=x&role=wizard").Expect(t, http.StatusUnprocessableEntity)
		if got := strings.Join(locs(t, r), ","); got != "query.email,query.password" {
			// Missing fields are reported first; the role is checked once they are present.
			t.Fatalf("locs %s", got)
		}
		r = do("POST", "/api/admin/users?username=wiz&email=wiz@tuxlab.org&password=long+enough+pw&role=wizard").Expect(t, http.StatusUnprocessableEntity)
		if got := strings.Join(locs(t, r), ","); got != "query.role" {
			t.Fatalf("locs %s", got)
		}

		id := fmt.Sprint(created.ID)
		var changed userBody
		do("PUT", "/api/admin/users/"+id+"/role?role=student").Expect(t, 200).JSON(t, &changed)
		if changed.Role != "student" {
			t.Fatalf("role %q", changed.Role)
		}
		do("PUT", "/api/admin/users/"+id+"/active?is_active=false").Expect(t, 200).JSON(t, &changed)
		if changed.IsActive {
			t.Fatal("still active")
		}
		do("DELETE", "/api/admin/users/"+id).Expect(t, 200)
		do("DELETE", "/api/admin/users/"+id).Expect(t, http.StatusNotFound)

		tests := []struct {
			name, method, path string
			status             int
			locs               string
		}{
			{"role of unknown user", "PUT", "/api/admin/users/99999/role?role=admin", 404, ""},
			{"activate unknown user", "PUT", "/api/admin/users/99999/active?is_active=true", 404, ""},
			{"non-integer id", "PUT", "/api/admin/users/abc/role?role=admin", 422, "path.id"},
			{"zero id", "DELETE", "/api/admin/users/0", 422, "path.id"},
			{"huge id", "DELETE", "/api/admin/users/99999999999999999999999", 422, "path.id"},
			{"missing role", "PUT", "/api/admin/users/1/role", 422, "query.role"},
			{"bad role", "PUT", "/api/admin/users/1/role?role=root", 422, "query.role"},
			{"bad boolean", "PUT", "/api/admin/users/1/active?is_active=maybe", 422, "query.is_active"},
			{"bad page", "GET", "/api/admin/users?page=0", 422, "query.page"},
			{"page size over max", "GET", "/api/admin/users?page_size=201", 422, "query.page_size"},
			{"page not a number", "GET", "/api/admin/users?page=two", 422, "query.page"},
			{"bad role filter", "GET", "/api/admin/users?role=wizard", 422, "query.role"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := do(tt.method, tt.path).Expect(t, tt.status)
				if tt.locs != "" {
					if got := strings.Join(locs(t, r), ","); got != tt.locs {
						t.Fatalf("locs %s, want %s", got, tt.locs)
					}
				}
			})
		}
	})
}

func TestAdminUserListPagination(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		root := e.CreateUser("root", auth.RoleAdmin)
		for i := range 6 {
			e.CreateUser(fmt.Sprintf("learner%d", i), auth.RoleStudent)
		}
		r := e.Get("/api/admin/users?page=2&page_size=3", root.Token).Expect(t, 200)
		var users []userBody
		r.JSON(t, &users)
		if len(users) != 3 || users[0].Username != "learner2" || users[2].Username != "learner4" {
			t.Fatalf("page 2 = %+v", users)
		}
		if r.Header.Get("X-Total-Count") != "7" {
			t.Fatalf("X-Total-Count %q", r.Header.Get("X-Total-Count"))
		}
		link := r.Header.Get("Link")
		for _, want := range []string{
			`</api/admin/users?page=1&page_size=3>; rel="first"`,
			`</api/admin/users?page=1&page_size=3>; rel="prev"`,
			`</api/admin/users?page=3&page_size=3>; rel="next"`,
			`</api/admin/users?page=3&page_size=3>; rel="last"`,
		} {
			if !strings.Contains(link, want) {
				t.Fatalf("Link %q lacks %q", link, want)
			}
		}
		if strings.Contains(string(r.Body), "password") {
			t.Fatalf("list leaks passwords: %s", r.Body)
		}
		// Past the end: an empty array, not null.
		r = e.Get("/api/admin/users?page=9&page_size=3", root.Token).Expect(t, 200)
		if strings.TrimSpace(string(r.Body)) != "[]" {
			t.Fatalf("past the end: %s", r.Body)
		}
		e.Get("/api/admin/users?role=admin", root.Token).Expect(t, 200).JSON(t, &users)
		if len(users) != 1 || users[0].Username != "root" {
			t.Fatalf("admins = %+v", users)
		}
	})
}

func TestLastActiveAdminIsProtected(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		root := e.CreateUser("root", auth.RoleAdmin)
		id := fmt.Sprint(root.ID)
		for _, path := range []string{"/api/admin/users/" + id + "/role?role=student", "/api/admin/users/" + id + "/active?is_active=false"} {
			e.Do(apitest.Request{Method: "PUT", Path: path, Token: root.Token}).Expect(t, http.StatusConflict)
		}
		e.Do(apitest.Request{Method: "DELETE", Path: "/api/admin/users/" + id, Token: root.Token}).Expect(t, http.StatusConflict)

		// An inactive second admin does not count; an active one does.
		second := e.CreateUser("root2", auth.RoleAdmin)
		sid := fmt.Sprint(second.ID)
		e.Do(apitest.Request{Method: "PUT", Path: "/api/admin/users/" + sid + "/active?is_active=false", Token: root.Token}).Expect(t, 200)
		e.Do(apitest.Request{Method: "DELETE", Path: "/api/admin/users/" + id, Token: root.Token}).Expect(t, http.StatusConflict)
		e.Do(apitest.Request{Method: "PUT", Path: "/api/admin/users/" + sid + "/active?is_active=true", Token: root.Token}).Expect(t, 200)

		// Two admins demoting each other at once: exactly one succeeds.
		var reqs []apitest.Request
		for _, pair := range [][2]*apitest.User{{root, second}, {second, root}} {
			reqs = append(reqs, apitest.Request{Method: "PUT", Path: fmt.Sprintf("/api/admin/users/%d/role?role=student", pair[1].ID), Token: pair[0].Token})
		}
		statuses := statusesOf(e.DoConcurrently(reqs))
		ok := 0
		for _, s := range statuses {
			if s == 200 {
				ok++
			}
		}
		if ok != 1 {
			t.Fatalf("statuses %v: want exactly one demotion to succeed", statuses)
		}
		var stats struct {
			Users struct {
				ByRole map[string]int `json:"by_role"`
			} `json:"users"`
		}
		for _, u := range []*apitest.User{root, second} {
			if r := e.Get("/api/admin/stats", u.Token); r.Status == 200 {
				r.JSON(t, &stats)
			}
		}
		if stats.Users.ByRole["admin"] != 1 {
			t.Fatalf("admins left: %d", stats.Users.ByRole["admin"])
		}
	})
}

func TestAdminStats(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		root := e.CreateUser("root", auth.RoleAdmin)
		e.CreateUser("s1", auth.RoleStudent)
		s2 := e.CreateUser("s2", auth.RoleStudent)
		e.CreateUser("i1", auth.RoleInstructor)
		e.Do(apitest.Request{Method: "PUT", Path: fmt.Sprintf("/api/admin/users/%d/active?is_active=false", s2.ID), Token: root.Token}).Expect(t, 200)
		var stats struct {
			Users struct {
				Total, Active, Inactive int
				ByRole                  map[string]int `json:"by_role"`
			} `json:"users"`
		}
		e.Get("/api/admin/stats", root.Token).Expect(t, 200).JSON(t, &stats)
		u := stats.Users
		if u.Total != 4 || u.Active != 3 || u.Inactive != 1 || u.ByRole["student"] != 2 || u.ByRole["instructor"] != 1 || u.ByRole["admin"] != 1 {
			t.Fatalf("stats = %+v", u)
		}
	})
}
