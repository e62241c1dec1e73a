package httpapi_test

import (
	"context"
	"testing"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/errs"
	"tuxlab/internal/exam"
	"tuxlab/internal/lab"
	"tuxlab/internal/lesson"
)

// TestAuthoringRuleInTheDomain calls the authoring methods of lesson, lab and
// exam directly, behind the HTTP admin gate, and checks that the domain itself
// refuses every role but admin before it looks at the input or the store.
func TestAuthoringRuleInTheDomain(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ctx := context.Background()
		ids := loadFixture(t, e)
		module, theme := ids["shell"], ids["shell-pwd"]
		calls := []struct {
			name string
			call func(a actor.Actor) error
		}{
			{"lesson.CreateModule", func(a actor.Actor) error {
				_, err := e.App.Lessons.CreateModule(ctx, a, lesson.NewModule{Title: "Rule"})
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
		}
		before, _, err := e.App.Lessons.Modules(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			for _, role := range []actor.Role{actor.Student, actor.Instructor} {
				err := c.call(actor.Actor{UserID: 1, Role: role})
				if !errs.Is(err, errs.Forbidden) {
					t.Errorf("%s as %s: got %v, want Forbidden", c.name, role, err)
				}
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
		if len(after) != len(before)+1 {
			t.Errorf("modules: %d before, %d after; want only the admin's one more", len(before), len(after))
		}
	})
}
