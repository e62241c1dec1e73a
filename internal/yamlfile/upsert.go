package yamlfile

import (
	"context"
	"errors"
	"fmt"
)

// Counts is what an import did: items created, updated and left unchanged.
type Counts struct{ Created, Updated, Unchanged int }

// Describe says what an import of items (exams, laboratories) did.
func (c Counts) Describe(items string) string {
	return fmt.Sprintf("%s: %d created, %d updated, %d unchanged", items, c.Created, c.Updated, c.Unchanged)
}

// Upserter imports the authored items of one kind (exams, laboratories) by
// slug. Each domain passes how it finds, creates, compares and updates its
// items; importing the same files twice changes nothing.
type Upserter[T, In any] struct {
	Find     func(ctx context.Context, slug string) (T, error)
	NotFound error // what Find returns for an unknown slug
	Create   func(context.Context, In) error
	Update   func(ctx context.Context, old T, in In) error
	// Same reports whether in would leave old as it is; its error is a
	// validation problem of in.
	Same func(old T, in In) (bool, error)
}

// Upsert creates, updates or leaves the item of slug as in describes and
// counts what it did in c. Problems are reported against p, the file's path.
func (u Upserter[T, In]) Upsert(ctx context.Context, c *Counts, p, slug string, in In) error {
	old, err := u.Find(ctx, slug)
	switch {
	case errors.Is(err, u.NotFound):
		if err := u.Create(ctx, in); err != nil {
			return fmt.Errorf("%s: %s", p, Describe(err))
		}
		c.Created++
		return nil
	case err != nil:
		return err
	}
	same, err := u.Same(old, in)
	if err != nil {
		return fmt.Errorf("%s: %s", p, Describe(err))
	}
	if same {
		c.Unchanged++
		return nil
	}
	if err := u.Update(ctx, old, in); err != nil {
		return fmt.Errorf("%s: %s", p, Describe(err))
	}
	c.Updated++
	return nil
}

// Ref looks up the id of name, a module or sandbox template (what) that the
// file p refers to; an empty name refers to none, 0.
func Ref(ctx context.Context, p, what, name string, find func(context.Context, string) (int64, error)) (int64, error) {
	if name == "" {
		return 0, nil
	}
	id, err := find(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("%s: %s %q: %w", p, what, name, err)
	}
	return id, nil
}
