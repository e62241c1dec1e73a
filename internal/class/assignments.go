package class

import (
	"context"
	"errors"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/errs"
)

// NewAssignment is what an instructor sends to set a due date.
type NewAssignment struct {
	Kind   Kind
	ItemID int64
	DueAt  time.Time
}

// Assign sets a due date on a laboratory or exam for class id, as its
// teacher. The item must exist and the date lie in the future (422, located
// at "item_id" or "due_at"); ErrAssignmentExists for an item the class is
// already assigned, ErrTooManyAssignments past the limit.
func (s *Service) Assign(ctx context.Context, a actor.Actor, id int64, n NewAssignment) (*Assignment, error) {
	if _, err := s.taught(ctx, a, id); err != nil {
		return nil, err
	}
	var f errs.Fields
	if n.Kind != KindLab && n.Kind != KindExam {
		f.Add([]any{"kind"}, "Kind must be lab or exam", "enum")
	}
	if n.ItemID < 1 {
		f.Add([]any{"item_id"}, "Item id must be a positive integer", "value_error")
	}
	now := s.stamp()
	if !n.DueAt.After(now) {
		f.Add([]any{"due_at"}, "Due date must be in the future", "value_error")
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	as := &Assignment{ClassID: id, Kind: n.Kind, ItemID: n.ItemID, DueAt: n.DueAt.UTC().Truncate(time.Second), CreatedAt: now}
	err := s.store.CreateAssignment(ctx, as, MaxAssignmentsPerClass)
	if errors.Is(err, ErrItemNotFound) {
		what := "Laboratory"
		if n.Kind == KindExam {
			what = "Exam"
		}
		return nil, errs.Field([]any{"item_id"}, what+" not found", "value_error")
	}
	if err != nil {
		return nil, err
	}
	return as, nil
}

// Assignments returns class id's assignments by due date, to its teacher
// and its learners; anyone else gets ErrClassNotFound.
func (s *Service) Assignments(ctx context.Context, a actor.Actor, id int64) ([]*Assignment, error) {
	if _, err := s.Class(ctx, a, id); err != nil {
		return nil, err
	}
	return s.store.FindAssignments(ctx, id)
}

// Unassign deletes assignment assignmentID of class id, as its teacher.
func (s *Service) Unassign(ctx context.Context, a actor.Actor, id, assignmentID int64) error {
	if _, err := s.taught(ctx, a, id); err != nil {
		return err
	}
	return s.store.DeleteAssignment(ctx, id, assignmentID)
}

// LearnerAssignments returns the assignments of every class a is a learner
// of, by due date, each with whether a has done it.
func (s *Service) LearnerAssignments(ctx context.Context, a actor.Actor) ([]*LearnerAssignment, error) {
	as, err := s.store.FindLearnerAssignments(ctx, a.UserID)
	if err != nil {
		return nil, err
	}
	now := s.stamp()
	for _, la := range as {
		la.Overdue = !la.Done && now.After(la.DueAt)
	}
	return as, nil
}
