package httpapi_test

import (
	"context"
	"testing"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/errs"
	"tuxlab/internal/exam"
	"tuxlab/internal/lab"
	"tuxlab/internal/lesson"
)

// TestAuthoringRuleInTheDomain calls the authoring methods of lesson, lab and
// exam directly, behind the HTTP author gate, and checks that the domain itself
// refuses a student before it looks at the input or the store, and an
// instructor on the system's content (the fixture, owned by no one).
func TestAuthoringRuleInTheDomain(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ctx := context.Background()
		ids := loadFixture(t, e)
		teacher := e.CreateUser("teacher", auth.RoleInstructor)
		module, theme := ids["shell"], ids["shell-pwd"]
		calls := []struct {
			name string
			call func(a actor.Actor) error
		}{
			{"lesson.CreateModule", func(a actor.Actor) error {
				_, err := e.App.Lessons.CreateModule(ctx, a, lesson.NewModule{Title: "Rule " + string(a.Role)})
				return err
			}},
			{"lesson.UpdateModule", func(a actor.Actor) error {
				title := "Renamed"
				_, err := e.App.Lessons.UpdateModule(ctx, a, module, lesson.ModuleUpdate{Title: &title})
				return err
			}},
			{"lesson.DeleteModule", func(a actor.Actor) error { return e.App.Lessons.DeleteModule(ctx, a, 1<<40, false) }},
			{"lesson.ReorderModules", func(a actor.Actor) error { return e.App.Lessons.ReorderModules(ctx, a, nil) }},
			{"lesson.ReorderThemes", func(a actor.Actor) error { return e.App.Lessons.ReorderThemes(ctx, a, module, nil) }},
			{"lesson.CreateTheme", func(a actor.Actor) error {
				_, err := e.App.Lessons.CreateTheme(ctx, a, lesson.NewTheme{ModuleID: module, Title: "Rule", EstimatedMinutes: 5})
				return err
			}},
			{"lesson.UpdateTheme", func(a actor.Actor) error {
				title := "Renamed"
				_, err := e.App.Lessons.UpdateTheme(ctx, a, theme, lesson.ThemeUpdate{Title: &title})
				return err
			}},
			{"lesson.SetContent", func(a actor.Actor) error {
				_, err := e.App.Lessons.SetContent(ctx, a, theme, "# Changed")
				return err
			}},
			{"lesson.DeleteTheme", func(a actor.Actor) error { return e.App.Lessons.DeleteTheme(ctx, a, 1<<40) }},
			{"lab.Create", func(a actor.Actor) error { _, err := e.App.Labs.Create(ctx, a, lab.Input{}); return err }},
			{"lab.Update", func(a actor.Actor) error { _, err := e.App.Labs.Update(ctx, a, 1<<40, lab.Input{}); return err }},
			{"lab.Delete", func(a actor.Actor) error { return e.App.Labs.Delete(ctx, a, 1<<40, false) }},
			{"exam.Create", func(a actor.Actor) error { _, err := e.App.Exams.Create(ctx, a, exam.Input{}); return err }},
			{"exam.Update", func(a actor.Actor) error { _, err := e.App.Exams.Update(ctx, a, 1<<40, exam.Input{}); return err }},
			{"exam.Delete", func(a actor.Actor) error { return e.App.Exams.Delete(ctx, a, 1<<40, false) }},
			// Last: the admin's call deletes.
			{"lesson.DeleteTheme (system's)", func(a actor.Actor) error { return e.App.Lessons.DeleteTheme(ctx, a, ids["shell-ls"]) }},
			{"lesson.DeleteModule (system's)", func(a actor.Actor) error { return e.App.Lessons.DeleteModule(ctx, a, module, true) }},
		}
		before, _, err := e.App.Lessons.Modules(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		// What an instructor may do to content of no owner: create their own
		// modules, labs and exams, nothing else.
		instructorMay := map[string]bool{"lesson.CreateModule": true, "lab.Create": true, "exam.Create": true,
			"lesson.DeleteModule": true, "lesson.DeleteTheme": true, "lab.Update": true, "lab.Delete": true, "exam.Update": true, "exam.Delete": true} // unknown ids: 404 before any rule
		for _, c := range calls {
			if err := c.call(actor.Actor{UserID: teacher.ID, Role: actor.Student}); !errs.Is(err, errs.Forbidden) {
				t.Errorf("%s as student: got %v, want Forbidden", c.name, err)
			}
			err := c.call(actor.Actor{UserID: teacher.ID, Role: actor.Instructor})
			if got := errs.Is(err, errs.Forbidden); got == instructorMay[c.name] {
				t.Errorf("%s as instructor: got %v, want Forbidden %v", c.name, err, !instructorMay[c.name])
			}
			// An admin gets past the rule: whatever the outcome, it is not Forbidden.
			if err := c.call(actor.AsAdmin()); errs.Is(err, errs.Forbidden) {
				t.Errorf("%s as admin: %v", c.name, err)
			}
		}
		after, _, err := e.App.Lessons.Modules(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The admin's module is published; the instructor's is a draft, which
		// learners do not see, and the admin deleted the system's module.
		if len(after) != len(before) {
			t.Errorf("modules learners see: %d before, %d after; want the admin's one for the one deleted", len(before), len(after))
		}
	})
}
