package stats_test

import (
	"context"
	"errors"
	"testing"

	"tuxlab/internal/auth"
	"tuxlab/internal/dashboard"
	"tuxlab/internal/lesson"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/stats"
)

func sources(fail string) stats.Sources {
	boom := errors.New("store down")
	errIf := func(name string) error {
		if name == fail {
			return boom
		}
		return nil
	}
	return stats.Sources{
		Users:     func(context.Context) (auth.UserStats, error) { return auth.UserStats{Total: 3}, errIf("users") },
		Lessons:   func(context.Context) (lesson.Stats, error) { return lesson.Stats{Modules: 2}, errIf("lessons") },
		Sandboxes: func(context.Context) (sandbox.Stats, error) { return sandbox.Stats{Containers: 4}, errIf("sandboxes") },
		Learning: func(context.Context) (*dashboard.SystemRows, error) {
			return &dashboard.SystemRows{ActiveUsers7d: 1}, errIf("learning")
		},
	}
}

func TestCollect(t *testing.T) {
	for _, fail := range []string{"", "users", "lessons", "sandboxes", "learning"} {
		t.Run("failing "+fail, func(t *testing.T) {
			st, err := sources(fail).Collect(context.Background())
			if fail != "" {
				if err == nil || st != nil {
					t.Fatalf("Collect = %+v, %v; want the %s error", st, err, fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.Users.Total != 3 || st.Lessons.Modules != 2 || st.Sandboxes.Containers != 4 || st.Learning.ActiveUsers7d != 1 {
				t.Errorf("Collect = %+v; want every source's figures", st)
			}
		})
	}
}
