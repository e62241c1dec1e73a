package lesson

import (
	"context"
	"time"

	"tuxlab/internal/actor"
)

// Progress is how many of a module's themes a learner completed.
type Progress struct{ Completed, Total int }

// ModuleProgress is a module with one learner's progress through it.
type ModuleProgress struct {
	*Module
	Done     []bool // per theme of Module.Themes: completed
	Progress Progress
}

// ProgressOf returns m with the progress that done (theme id → when the
// learner completed it) records.
func ProgressOf(m *Module, done map[int64]time.Time) ModuleProgress {
	p := ModuleProgress{Module: m, Done: make([]bool, len(m.Themes)), Progress: Progress{Total: len(m.Themes)}}
	for i, t := range m.Themes {
		if _, ok := done[t.ID]; ok {
			p.Done[i] = true
			p.Progress.Completed++
		}
	}
	return p
}

// ModulesProgress returns the curriculum as a sees it, in order, with a's
// progress through each module.
func (s *Service) ModulesProgress(ctx context.Context, a actor.Actor) ([]ModuleProgress, error) {
	modules, done, err := s.ModulesFor(ctx, a)
	if err != nil {
		return nil, err
	}
	out := make([]ModuleProgress, len(modules))
	for i, m := range modules {
		out[i] = ProgressOf(m, done)
	}
	return out, nil
}
