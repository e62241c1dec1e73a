package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/store/storetest"
)

// pinnedClock is a clock a test moves by hand.
type pinnedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *pinnedClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *pinnedClock) Set(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	c.t = t
}

type dashboardStatsBody struct {
	Themes  struct{ Completed, Total, Percent int } `json:"themes"`
	Modules []struct {
		Title                     string
		Completed, Total, Percent int
	} `json:"modules"`
	Labs  struct{ Passed, Attempted int } `json:"labs"`
	Exams struct {
		Passed, Attempted int
		Best              []struct {
			ExamID    int64 `json:"exam_id"`
			BestScore int   `json:"best_score"`
			Passed    bool  `json:"passed"`
			Attempts  int   `json:"attempts"`
		} `json:"best"`
	} `json:"exams"`
	SandboxesRunning int                            `json:"sandboxes_running"`
	Streak           struct{ Current, Longest int } `json:"streak"`
	LastActiveAt     *string                        `json:"last_active_at"`
}

type analyticsBody struct {
	From, To string
	Days     []struct {
		Date   string
		Events int
	}
	Modules []struct {
		Title            string
		Completed, Total int
	} `json:"completions_by_module"`
	Scores []struct {
		Kind   string
		Score  int
		Passed bool
	} `json:"score_history"`
	MinutesWindow int `json:"minutes_in_window"`
	MinutesTotal  int `json:"minutes_total"`
}

// TestDashboardFollowsAScriptedLearner: three themes over two days, a passed
// lab, an exam failed then passed; the dashboard says exactly that, and the
// streak lapses when a day goes by without practice.
func TestDashboardFollowsAScriptedLearner(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	// Each engine's server gets its own clock: the subtests run in parallel.
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			clock := &pinnedClock{}
			clock.Set("2026-03-02T10:00:00Z")
			e := apitest.New(t, eng, func(c *config.Config) { c.Now = clock.Now })
			admin, alice := rootAndAlice(e)
			bob := e.CreateUser("bob", auth.RoleStudent)
			ids := loadFixture(t, e) // two modules: shell (2 themes), files (1 theme)
			e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/admin/lessons/themes?module_id=%d&title=Extra&estimated_minutes=4", ids["files"]),
				Token: admin.Token}).Expect(t, 201)
			complete := func(slug string) {
				e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/lessons/themes/%d/complete", ids[slug]), Token: alice.Token}).Expect(t, 200)
			}

			// Day 1: two themes, one of them twice (recorded once).
			complete("shell-pwd")
			clock.Set("2026-03-02T16:30:00Z")
			complete("shell-ls")
			complete("shell-ls")

			// Day 2: a third theme, a lab passed, an exam failed then passed.
			clock.Set("2026-03-03T09:00:00Z")
			complete("files-cat")
			labID := createLab(t, e, admin, fmt.Sprintf("slug=easy-lab&title=Easy&module_id=%d&template_id=%d&time_limit_minutes=30", ids["shell"], busyboxTemplate(t, e)),
				map[string]any{"tasks": []map[string]any{{"title": "Nothing to do", "check": "true"}}})
			var lab labAttemptBody
			e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/laboratories/%d/start", labID), Token: alice.Token}).Expect(t, 201).JSON(t, &lab)
			labSandbox := *lab.ContainerID
			t.Cleanup(func() { e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), labSandbox) })
			clock.Set("2026-03-03T09:20:00Z")
			e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/laboratories/%d/submit", labID), Token: alice.Token}).Expect(t, 200).JSON(t, &lab)
			if !lab.Passed {
				t.Fatalf("lab %+v", lab)
			}
			ex := createExam(t, e, admin, "slug=quiz&title=Quiz&time_limit_minutes=10&passing_score=50", map[string]any{"questions": []map[string]any{
				{"kind": "single_choice", "prompt": "Pick b", "options": []string{"a", "b"}, "answer": 1}}})
			for i, option := range []string{"a", "b"} {
				clock.Set(fmt.Sprintf("2026-03-03T1%d:00:00Z", i))
				at := startExam(t, e, alice.Token, ex.ID)
				clock.Set(fmt.Sprintf("2026-03-03T1%d:05:00Z", i))
				e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/exams/%d/submit", ex.ID), Token: alice.Token,
					Body: map[string]any{"answers": []map[string]any{{"question_id": ex.Questions[0].ID, "choice": at.shown(t, ex.Questions[0].ID, option)}}}}).Expect(t, 200)
			}

			var st dashboardStatsBody
			e.Get("/api/dashboard/stats", alice.Token).Expect(t, 200).JSON(t, &st)
			if st.Themes.Completed != 3 || st.Themes.Total != 4 || st.Themes.Percent != 75 {
				t.Fatalf("themes %+v", st.Themes)
			}
			if len(st.Modules) != 2 || st.Modules[0].Completed != 2 || st.Modules[0].Percent != 100 || st.Modules[1].Completed != 1 || st.Modules[1].Percent != 50 {
				t.Fatalf("modules %+v", st.Modules)
			}
			if st.Labs.Passed != 1 || st.Labs.Attempted != 1 || st.Exams.Passed != 1 || st.Exams.Attempted != 1 ||
				len(st.Exams.Best) != 1 || st.Exams.Best[0].BestScore != 100 || st.Exams.Best[0].Attempts != 2 || !st.Exams.Best[0].Passed {
				t.Fatalf("labs %+v exams %+v", st.Labs, st.Exams)
			}
			// The lab's sandbox went with its submission.
			if st.SandboxesRunning != 0 || st.Streak.Current != 2 || st.Streak.Longest != 2 || st.LastActiveAt == nil || *st.LastActiveAt != "2026-03-03T11:05:00Z" {
				t.Fatalf("sandboxes %d, streak %+v, last active %v", st.SandboxesRunning, st.Streak, st.LastActiveAt)
			}

			// The activity, newest first: 3 completions, the lab's sandbox, the lab
			// started and submitted, two exam starts and two submissions.
			r := e.Get("/api/dashboard/activity?page=1&page_size=4", alice.Token).Expect(t, 200)
			var events []struct {
				Kind   string
				At     string
				Title  string
				Score  *int
				Passed *bool
			}
			r.JSON(t, &events)
			if r.Header.Get("X-Total-Count") != "10" || !strings.Contains(r.Header.Get("Link"), `rel="next"`) || len(events) != 4 {
				t.Fatalf("activity page: total %s, link %s, %d events", r.Header.Get("X-Total-Count"), r.Header.Get("Link"), len(events))
			}
			if events[0].Kind != "exam_submitted" || events[0].Score == nil || *events[0].Score != 100 || events[0].Title != "Quiz" {
				t.Fatalf("newest event %+v", events[0])
			}
			e.Get("/api/dashboard/activity?kind=theme_completed", alice.Token).Expect(t, 200).JSON(t, &events)
			if len(events) != 3 || events[2].At != "2026-03-02T10:00:00Z" {
				t.Fatalf("completions %+v", events)
			}
			e.Get("/api/dashboard/activity?kind=everything", alice.Token).Expect(t, 422)

			var an analyticsBody
			e.Get("/api/dashboard/analytics?days=7", alice.Token).Expect(t, 200).JSON(t, &an)
			if an.From != "2026-02-25" || an.To != "2026-03-03" || len(an.Days) != 7 || an.Days[5].Events != 2 || an.Days[6].Events != 8 {
				t.Fatalf("analytics days %+v", an)
			}
			// 5 + 7 + 9 estimated theme minutes, 20 minutes of lab, 5 of each exam attempt.
			if len(an.Scores) != 3 || an.Scores[0].Kind != "lab" || an.Scores[1].Passed || !an.Scores[2].Passed || an.MinutesTotal != 51 || an.MinutesWindow != 51 {
				t.Fatalf("analytics scores %+v, minutes %d/%d", an.Scores, an.MinutesWindow, an.MinutesTotal)
			}
			if len(an.Modules) != 2 || an.Modules[0].Completed != 2 {
				t.Fatalf("completions by module %+v", an.Modules)
			}
			for _, bad := range []string{"days=0", "days=367", "days=x", "tz=Mars/Olympus"} {
				e.Get("/api/dashboard/analytics?"+bad, alice.Token).Expect(t, 422)
			}

			// The admins' system view counts the same things.
			var sys struct {
				Learning struct {
					Active7d  int            `json:"active_users_7d"`
					Active30d int            `json:"active_users_30d"`
					Sandboxes map[string]int `json:"sandboxes_by_status"`
					Exams     []struct {
						Title                      string
						Attempts, Finished, Passed int
						PassRate                   int `json:"pass_rate"`
					} `json:"exams"`
					Labs []struct {
						Attempts, Passed int
						PassRate         int `json:"pass_rate"`
					} `json:"laboratories"`
					Most []struct {
						Title       string
						Completions int
					} `json:"most_completed_themes"`
					Least []struct {
						Title       string
						Completions int
					} `json:"least_completed_themes"`
				} `json:"learning"`
			}
			e.Get("/api/admin/stats", admin.Token).Expect(t, 200).JSON(t, &sys)
			l := sys.Learning
			if l.Active7d != 1 || l.Active30d != 1 || l.Sandboxes["running"] != 0 || len(l.Exams) != 1 || l.Exams[0].Attempts != 2 ||
				l.Exams[0].Passed != 1 || l.Exams[0].PassRate != 50 || len(l.Labs) != 1 || l.Labs[0].PassRate != 100 {
				t.Fatalf("system view %+v", l)
			}
			if len(l.Most) != 4 || l.Most[0].Completions != 1 || l.Least[0].Title != "Extra" || l.Least[0].Completions != 0 {
				t.Fatalf("themes most %+v least %+v", l.Most, l.Least)
			}

			// Two days later with nothing done: the streak has lapsed, the record stays.
			clock.Set("2026-03-05T08:00:00Z")
			e.Get("/api/dashboard/stats?tz=Europe/Berlin", alice.Token).Expect(t, 200).JSON(t, &st)
			if st.Streak.Current != 0 || st.Streak.Longest != 2 {
				t.Fatalf("lapsed streak %+v", st.Streak)
			}

			// Another learner's dashboard is their own.
			e.Get("/api/dashboard/stats", bob.Token).Expect(t, 200).JSON(t, &st)
			if st.Themes.Completed != 0 || st.Labs.Attempted != 0 || st.Streak.Longest != 0 {
				t.Fatalf("bob sees %+v", st)
			}
			e.Get("/api/dashboard/activity", bob.Token).Expect(t, 200).JSON(t, &events)
			if len(events) != 0 {
				t.Fatalf("bob's activity %+v", events)
			}
			e.Get("/api/dashboard/stats", "").Expect(t, 401)
		})
	}
}
