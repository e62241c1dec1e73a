// Package stats gathers the figures of GET /api/admin/stats from the
// domains that own them: users, lessons, sandboxes and learning. Each
// domain counts in its store; this package only brings the figures together.
package stats

import (
	"context"

	"tuxlab/internal/auth"
	"tuxlab/internal/dashboard"
	"tuxlab/internal/lesson"
	"tuxlab/internal/sandbox"
)

// Stats is the admins' view of the platform.
type Stats struct {
	Users     auth.UserStats
	Lessons   lesson.Stats
	Sandboxes sandbox.Stats
	Learning  *dashboard.SystemRows
}

// Sources are the domains' calls the figures come from.
type Sources struct {
	Users     func(context.Context) (auth.UserStats, error)
	Lessons   func(context.Context) (lesson.Stats, error)
	Sandboxes func(context.Context) (sandbox.Stats, error)
	Learning  func(context.Context) (*dashboard.SystemRows, error)
}

// Collect asks every source in turn and returns the first error any gives.
func (src Sources) Collect(ctx context.Context) (*Stats, error) {
	var st Stats
	var err error
	if st.Users, err = src.Users(ctx); err != nil {
		return nil, err
	}
	if st.Lessons, err = src.Lessons(ctx); err != nil {
		return nil, err
	}
	if st.Sandboxes, err = src.Sandboxes(ctx); err != nil {
		return nil, err
	}
	if st.Learning, err = src.Learning(ctx); err != nil {
		return nil, err
	}
	return &st, nil
}
