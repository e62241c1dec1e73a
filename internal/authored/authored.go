// Package authored holds what the authored kinds of content with tasks,
// exams and laboratories, share: the admin's create, update and delete
// behind the author check, the module and sandbox template they refer to,
// the rules of their common fields, and their import from files by slug.
// Each kind passes its own store calls, defaults and field rules.
package authored

import (
	"context"
	"fmt"
	"reflect"
	"time"
	"unicode/utf8"

	"tuxlab/internal/actor"
	"tuxlab/internal/errs"
	"tuxlab/internal/lesson"
	"tuxlab/internal/yamlfile"
)

// Limits every kind shares.
const (
	MaxTextLen   = 20000 // a description, in characters
	MaxTimeLimit = 600   // minutes
)

// Refs are the module and the sandbox template an item refers to (nil: none).
type Refs struct{ ModuleID, TemplateID *int64 }

// Stamps point at an item's creation and last update times.
type Stamps struct{ Created, Updated *time.Time }

// Names resolves the modules, sandbox templates and owners items refer to;
// an unknown one is errs.NotFound.
type Names interface {
	ModuleIDBySlug(ctx context.Context, slug string) (int64, error)
	ModuleSlugByID(ctx context.Context, id int64) (string, error)
	// ModuleOwnerByID returns the owner of module id (nil: the system).
	ModuleOwnerByID(ctx context.Context, id int64) (*int64, error)
	// UserIDByName resolves the owner a file names.
	UserIDByName(ctx context.Context, username string) (int64, error)
	TemplateIDByName(ctx context.Context, name string) (int64, error)
	TemplateNameByID(ctx context.Context, id int64) (string, error)
}

// Kind is one kind of authored content, T (a pointer such as *exam.Exam),
// written from an In (its Input). Every field is required.
type Kind[T any, In any] struct {
	Names Names
	Now   func() time.Time
	// New returns an item with the kind's defaults, not yet validated.
	New func() T
	// Apply validates in and writes it onto item, naming every bad field.
	Apply func(in In, item T) error
	// Copy returns a copy of item that Apply may change without changing item.
	Copy   func(item T) T
	ID     func(item T) int64
	Refs   func(item T) Refs
	Stamps func(item T) Stamps
	// Access points at the item's owner and published state.
	Access func(item T) *lesson.Access

	FindByID   func(ctx context.Context, id int64) (T, error)
	FindBySlug func(ctx context.Context, slug string) (T, error)
	NotFound   error // what FindBySlug returns for an unknown slug
	Insert     func(ctx context.Context, item T) error
	Save       func(ctx context.Context, item T) error
	Remove     func(ctx context.Context, id int64, cascade bool) error
}

// ErrForeignModule refuses an instructor's lab or exam in a module of another author.
var ErrForeignModule = errs.E(errs.Forbidden, "Laboratories and exams go only into modules you own: this module belongs to another author")

// Create adds an item from an author's input, owned by a and published
// when a is an admin (a draft when an instructor) unless in says otherwise,
// and returns it as stored.
func (k Kind[T, In]) Create(ctx context.Context, a actor.Actor, in In) (T, error) {
	var zero T
	if err := a.MayAuthor(); err != nil {
		return zero, err
	}
	item := k.New()
	*k.Access(item) = lesson.Access{OwnerID: a.OwnerID(), Published: a.PublishesByDefault()}
	now := k.Now()
	st := k.Stamps(item)
	*st.Created, *st.Updated = now, now
	if err := k.write(ctx, a, in, item, k.Insert); err != nil {
		return zero, err
	}
	return k.FindByID(ctx, k.ID(item))
}

// Get returns item id for its authoring view: a must be allowed to change it.
func (k Kind[T, In]) Get(ctx context.Context, a actor.Actor, id int64) (T, error) {
	var zero T
	if err := a.MayAuthor(); err != nil {
		return zero, err
	}
	item, err := k.FindByID(ctx, id)
	if err != nil {
		return zero, err
	}
	if err := a.MayChange(k.Access(item).OwnerID); err != nil {
		return zero, err
	}
	return item, nil
}

// Mine keeps the items of all that a may change: the authoring list.
func (k Kind[T, In]) Mine(a actor.Actor, all []T) ([]T, error) {
	if err := a.MayAuthor(); err != nil {
		return nil, err
	}
	out := make([]T, 0, len(all))
	for _, it := range all {
		if a.CanChange(k.Access(it).OwnerID) {
			out = append(out, it)
		}
	}
	return out, nil
}

// Published keeps the published items of all: what learners see.
func (k Kind[T, In]) Published(all []T) []T { return k.VisibleTo(actor.Actor{}, all) }

// VisibleTo keeps the items of all that a sees: published ones, and the
// drafts a may change.
func (k Kind[T, In]) VisibleTo(a actor.Actor, all []T) []T {
	out := make([]T, 0, len(all))
	for _, it := range all {
		if k.Access(it).VisibleTo(a) {
			out = append(out, it)
		}
	}
	return out
}

// Update changes the fields in gives of item id, which a must be allowed to
// change, and returns it as stored.
func (k Kind[T, In]) Update(ctx context.Context, a actor.Actor, id int64, in In) (T, error) {
	var zero T
	item, err := k.Get(ctx, a, id)
	if err != nil {
		return zero, err
	}
	if err := k.write(ctx, a, in, item, func(ctx context.Context, item T) error {
		*k.Stamps(item).Updated = k.Now()
		return k.Save(ctx, item)
	}); err != nil {
		return zero, err
	}
	return k.FindByID(ctx, id)
}

// write applies in to item, checks what it refers to and stores it.
func (k Kind[T, In]) write(ctx context.Context, a actor.Actor, in In, item T, store func(context.Context, T) error) error {
	var before *int64
	if m := k.Refs(item).ModuleID; m != nil {
		v := *m
		before = &v
	}
	if err := k.Apply(in, item); err != nil {
		return err
	}
	refs := k.Refs(item)
	if err := k.checkRefs(ctx, refs); err != nil {
		return err
	}
	if m := refs.ModuleID; m != nil && (before == nil || *before != *m) {
		owner, err := k.Names.ModuleOwnerByID(ctx, *m)
		if err != nil {
			return err
		}
		if !a.CanChange(owner) {
			return ErrForeignModule
		}
	}
	return store(ctx, item)
}

// Delete removes item id, which a must be allowed to change; with learners'
// attempts it needs cascade, which removes them too.
func (k Kind[T, In]) Delete(ctx context.Context, a actor.Actor, id int64, cascade bool) error {
	if _, err := k.Get(ctx, a, id); err != nil {
		return err
	}
	return k.Remove(ctx, id, cascade)
}

// checkRefs refuses a module or template that does not exist, naming the field.
func (k Kind[T, In]) checkRefs(ctx context.Context, r Refs) error {
	var f errs.Fields
	for _, ref := range []struct {
		id     *int64
		field  string
		msg    string
		lookup func(context.Context, int64) (string, error)
	}{
		{r.ModuleID, "module_id", "No module with this id", k.Names.ModuleSlugByID},
		{r.TemplateID, "template_id", "No sandbox template with this id", k.Names.TemplateNameByID},
	} {
		if ref.id == nil {
			continue
		}
		if _, err := ref.lookup(ctx, *ref.id); errs.Is(err, errs.NotFound) {
			f.Add([]any{ref.field}, ref.msg, "value_error")
		} else if err != nil {
			return err
		}
	}
	return f.Err()
}

// Same reports whether in would leave old as it is (Apply never touches
// the timestamps); its error is a validation problem of in.
func (k Kind[T, In]) Same(old T, in In) (bool, error) {
	next := k.Copy(old)
	if err := k.Apply(in, next); err != nil {
		return false, err
	}
	return reflect.DeepEqual(old, next), nil
}

// Upserter imports items by slug as an admin: importing the same files
// twice changes nothing.
func (k Kind[T, In]) Upserter() yamlfile.Upserter[T, In] {
	return yamlfile.Upserter[T, In]{
		Find: k.FindBySlug, NotFound: k.NotFound, Same: k.Same,
		Create: func(ctx context.Context, in In) error { _, err := k.Create(ctx, actor.AsAdmin(), in); return err },
		Update: func(ctx context.Context, old T, in In) error {
			_, err := k.Update(ctx, actor.AsAdmin(), k.ID(old), in)
			return err
		},
	}
}

// Resolve turns the module slug and template name a file p names into ids
// (0: none). A required template is looked up, and refused, even when the
// name is empty.
func (k Kind[T, In]) Resolve(ctx context.Context, p, module, template string, templateRequired bool) (moduleID, templateID int64, err error) {
	if moduleID, err = yamlfile.Ref(ctx, p, "module", module, k.Names.ModuleIDBySlug); err != nil {
		return 0, 0, err
	}
	if template == "" && !templateRequired {
		return moduleID, 0, nil
	}
	if templateID, err = k.Names.TemplateIDByName(ctx, template); err != nil {
		return 0, 0, fmt.Errorf("%s: sandbox template %q: %w", p, template, err)
	}
	return moduleID, templateID, nil
}

// CheckNames validates the slug, title and description every kind has,
// adding each problem to f.
func CheckNames(f *errs.Fields, slug, title, description string) {
	lesson.CheckSlug(f, []any{"slug"}, slug)
	lesson.CheckTitle(f, []any{"title"}, title)
	CheckLen(f, []any{"description"}, description, MaxTextLen)
}

// CheckLimits validates the time limit and the passing score every kind has.
func CheckLimits(f *errs.Fields, timeLimitMinutes, passingScore int) {
	if timeLimitMinutes < 1 || timeLimitMinutes > MaxTimeLimit {
		f.Add([]any{"time_limit_minutes"}, "Input should be between 1 and 600", "range")
	}
	if passingScore < 0 || passingScore > 100 {
		f.Add([]any{"passing_score"}, "Input should be between 0 and 100", "range")
	}
}

// CheckLen refuses a text of more than max characters.
func CheckLen(f *errs.Fields, loc []any, s string, max int) {
	if utf8.RuneCountInString(s) > max {
		f.Add(loc, "Text is too long", "string_too_long")
	}
}

// CheckCount refuses a list of items (field) that is empty or longer than
// max, with the kind's messages.
func CheckCount(f *errs.Fields, field string, n, max int, empty, tooMany string) {
	switch {
	case n == 0:
		f.Add([]any{field}, empty, "too_short")
	case n > max:
		f.Add([]any{field}, tooMany, "too_long")
	}
}

// Set writes *v to *dst when v is given.
func Set[V any](dst *V, v *V) {
	if v != nil {
		*dst = *v
	}
}

// SetRef writes an optional reference: v when given, and 0 clears it.
func SetRef(dst **int64, v *int64) {
	if v == nil {
		return
	}
	*dst = v
	if *v == 0 {
		*dst = nil
	}
}

// File is an item's file as read: where it is, the slug it upserts, the
// module, template and owner it names, and the Input it becomes once they
// are ids (0: none).
type File[In any] interface {
	Source() (path, slug, module, template string)
	OwnerName() string
	Input(moduleID, templateID, ownerID int64) In
}

// Import upserts the items of files by slug as an admin, with the owner
// (a username; none: the system) and published state each file gives, and
// counts what it did; importing the same files twice changes nothing. A required template
// is refused when a file names none.
func Import[T, In any, F File[In]](ctx context.Context, k Kind[T, In], files []F, templateRequired bool) (yamlfile.Counts, error) {
	var c yamlfile.Counts
	u := k.Upserter()
	for _, f := range files {
		p, slug, module, template := f.Source()
		moduleID, templateID, err := k.Resolve(ctx, p, module, template, templateRequired)
		if err != nil {
			return c, err
		}
		var ownerID int64
		if name := f.OwnerName(); name != "" {
			if ownerID, err = k.Names.UserIDByName(ctx, name); err != nil {
				return c, fmt.Errorf("%s: owner %q: %w", p, name, err)
			}
		}
		if err := u.Upsert(ctx, &c, p, slug, f.Input(moduleID, templateID, ownerID)); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Usernames returns the username of a user id, for exports.
type Usernames interface {
	UserNameByID(ctx context.Context, id int64) (string, error)
}

// FileAccess is how a file says who owns an item and whether it is
// published: the owner's username ("" for the system) and false for a
// draft (nil, absent from the file, for published).
func FileAccess(ctx context.Context, names Usernames, a lesson.Access) (string, *bool, error) {
	var (
		owner     string
		published *bool
		err       error
	)
	if a.OwnerID != nil {
		if owner, err = names.UserNameByID(ctx, *a.OwnerID); err != nil {
			return "", nil, fmt.Errorf("owner %d: %w", *a.OwnerID, err)
		}
	}
	if !a.Published {
		published = new(false)
	}
	return owner, published, nil
}
