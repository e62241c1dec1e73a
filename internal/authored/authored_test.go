package authored_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/authored"
	"tuxlab/internal/errs"
	"tuxlab/internal/lesson"
	"tuxlab/internal/yamlfile"
)

// item is a kind of authored content small enough to see whole.
type item struct {
	ID                 int64
	Slug, Title        string
	ModuleID, Template *int64
	Limit              int
	Steps              []string
	lesson.Access
	CreatedAt, Updated time.Time
}

type input struct {
	Slug, Title *string
	ModuleID    *int64
	Template    *int64
	Steps       []string
}

func (in input) apply(it *item) error {
	var f errs.Fields
	authored.Set(&it.Slug, in.Slug)
	authored.Set(&it.Title, in.Title)
	authored.SetRef(&it.ModuleID, in.ModuleID)
	authored.SetRef(&it.Template, in.Template)
	if in.Steps != nil {
		it.Steps = in.Steps
	}
	authored.CheckNames(&f, it.Slug, it.Title, "")
	authored.CheckLimits(&f, it.Limit, 50)
	authored.CheckCount(&f, "steps", len(it.Steps), 2, "At least one step", "At most two steps")
	return f.Err()
}

// names knows module 1 ("basics") and template 7 ("debian").
type names struct{}

func (names) ModuleIDBySlug(_ context.Context, s string) (int64, error) {
	if s == "basics" {
		return 1, nil
	}
	return 0, errs.E(errs.NotFound, "no module")
}
func (names) ModuleSlugByID(_ context.Context, id int64) (string, error) {
	if id == 1 {
		return "basics", nil
	}
	return "", errs.E(errs.NotFound, "no module")
}
func (names) ModuleOwnerByID(_ context.Context, id int64) (*int64, error) {
	if id == 1 {
		return nil, nil
	}
	return nil, errs.E(errs.NotFound, "no module")
}
func (names) UserIDByName(_ context.Context, name string) (int64, error) {
	return 0, errs.E(errs.NotFound, "no user")
}
func (names) TemplateIDByName(_ context.Context, s string) (int64, error) {
	if s == "debian" {
		return 7, nil
	}
	return 0, errs.E(errs.NotFound, "no template")
}
func (names) TemplateNameByID(_ context.Context, id int64) (string, error) {
	if id == 7 {
		return "debian", nil
	}
	return "", errs.E(errs.NotFound, "no template")
}

var errNotFound = errs.E(errs.NotFound, "Item not found")

// memory is a store of items in a map, with a clock that ticks per call.
type memory struct {
	items map[int64]*item
	next  int64
	clock time.Time
}

func (m *memory) kind() authored.Kind[*item, input] {
	find := func(_ context.Context, id int64) (*item, error) {
		if it, ok := m.items[id]; ok {
			c := *it
			return &c, nil
		}
		return nil, errNotFound
	}
	return authored.Kind[*item, input]{
		Names: names{},
		Now:   func() time.Time { m.clock = m.clock.Add(time.Minute); return m.clock },
		New:   func() *item { return &item{Limit: 30} },
		Apply: func(in input, it *item) error { return in.apply(it) },
		Copy:  func(it *item) *item { c := *it; return &c },
		ID:    func(it *item) int64 { return it.ID },
		Refs:  func(it *item) authored.Refs { return authored.Refs{ModuleID: it.ModuleID, TemplateID: it.Template} },
		Stamps: func(it *item) authored.Stamps {
			return authored.Stamps{Created: &it.CreatedAt, Updated: &it.Updated}
		},
		Access:   func(it *item) *lesson.Access { return &it.Access },
		FindByID: find,
		FindBySlug: func(ctx context.Context, slug string) (*item, error) {
			for id, it := range m.items {
				if it.Slug == slug {
					return find(ctx, id)
				}
			}
			return nil, errNotFound
		},
		NotFound: errNotFound,
		Insert: func(_ context.Context, it *item) error {
			m.next++
			it.ID = m.next
			c := *it
			m.items[it.ID] = &c
			return nil
		},
		Save: func(_ context.Context, it *item) error { c := *it; m.items[it.ID] = &c; return nil },
		Remove: func(_ context.Context, id int64, cascade bool) error {
			if _, ok := m.items[id]; !ok {
				return errNotFound
			}
			delete(m.items, id)
			return nil
		},
	}
}

func newMemory() *memory {
	return &memory{items: map[int64]*item{}, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func ptr[T any](v T) *T { return &v }

func valid() input {
	return input{Slug: ptr("first"), Title: ptr("First"), Steps: []string{"one"}}
}

// fieldLocs lists the first element of each field error's location.
func fieldLocs(err error) []string {
	var e *errs.Error
	if !errors.As(err, &e) {
		return nil
	}
	var out []string
	for _, f := range e.Fields {
		out = append(out, f.Loc[0].(string))
	}
	return out
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name     string
		who      actor.Actor
		change   func(*input)
		wantErr  errs.Kind
		wantLocs string
	}{
		{"valid", actor.AsAdmin(), func(*input) {}, 0, ""},
		{"a learner may not author", actor.User(5), func(*input) {}, errs.Forbidden, ""},
		{"every bad field at once", actor.AsAdmin(), func(in *input) { in.Slug, in.Title, in.Steps = ptr("Bad Slug"), ptr(""), []string{} }, errs.Invalid, "slug title steps"},
		{"too many steps", actor.AsAdmin(), func(in *input) { in.Steps = []string{"a", "b", "c"} }, errs.Invalid, "steps"},
		{"unknown module and template", actor.AsAdmin(), func(in *input) { in.ModuleID, in.Template = ptr(int64(9)), ptr(int64(9)) }, errs.Invalid, "module_id template_id"},
		{"known module and template", actor.AsAdmin(), func(in *input) { in.ModuleID, in.Template = ptr(int64(1)), ptr(int64(7)) }, 0, ""},
		{"0 is no module", actor.AsAdmin(), func(in *input) { in.ModuleID = ptr(int64(0)) }, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMemory()
			in := valid()
			tt.change(&in)
			it, err := m.kind().Create(context.Background(), tt.who, in)
			if tt.wantErr != 0 {
				if !errs.Is(err, tt.wantErr) {
					t.Fatalf("Create = %v; want kind %d", err, tt.wantErr)
				}
				if got := strings.Join(fieldLocs(err), " "); got != tt.wantLocs {
					t.Errorf("fields %q; want %q", got, tt.wantLocs)
				}
				if len(m.items) != 0 {
					t.Errorf("a refused create stored %d items", len(m.items))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if it.ID != 1 || it.Limit != 30 || it.CreatedAt.IsZero() || !it.CreatedAt.Equal(it.Updated) {
				t.Errorf("created %+v; want id 1, the default limit, both stamps the same", it)
			}
			if in.ModuleID != nil && *in.ModuleID == 0 && it.ModuleID != nil {
				t.Errorf("module %v; want none", *it.ModuleID)
			}
		})
	}
}

func TestUpdateKeepsWhatIsNotGiven(t *testing.T) {
	ctx := context.Background()
	m := newMemory()
	k := m.kind()
	created, err := k.Create(ctx, actor.AsAdmin(), input{Slug: ptr("first"), Title: ptr("First"), ModuleID: ptr(int64(1)), Steps: []string{"one"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.Update(ctx, actor.AsAdmin(), created.ID, input{Title: ptr("Renamed")})
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "Renamed" || got.Slug != "first" || got.ModuleID == nil || len(got.Steps) != 1 {
		t.Errorf("updated %+v; want only the title changed", got)
	}
	if !got.CreatedAt.Equal(created.CreatedAt) || !got.Updated.After(created.Updated) {
		t.Errorf("stamps %v/%v; want created kept, updated later than %v", got.CreatedAt, got.Updated, created.Updated)
	}
	if _, err := k.Update(ctx, actor.AsAdmin(), 99, input{}); !errors.Is(err, errNotFound) {
		t.Errorf("Update(99) = %v; want not found", err)
	}
	if _, err := k.Update(ctx, actor.AsAdmin(), created.ID, input{Template: ptr(int64(3))}); !errs.Is(err, errs.Invalid) {
		t.Errorf("Update with an unknown template = %v; want 422", err)
	}
	if err := k.Delete(ctx, actor.User(2), created.ID, false); !errs.Is(err, errs.Forbidden) {
		t.Errorf("a learner's Delete = %v; want forbidden", err)
	}
	if err := k.Delete(ctx, actor.AsAdmin(), created.ID, false); err != nil || len(m.items) != 0 {
		t.Errorf("Delete = %v, %d left; want it gone", err, len(m.items))
	}
}

func TestSameIgnoresStampsAndLeavesOldAlone(t *testing.T) {
	old := &item{ID: 3, Slug: "first", Title: "First", Limit: 30, Steps: []string{"one"},
		CreatedAt: time.Unix(10, 0), Updated: time.Unix(20, 0)}
	k := newMemory().kind()
	tests := []struct {
		name    string
		in      input
		same    bool
		invalid bool
	}{
		{"nothing given", input{}, true, false},
		{"the same values", input{Slug: ptr("first"), Steps: []string{"one"}}, true, false},
		{"a new title", input{Title: ptr("Other")}, false, false},
		{"new steps", input{Steps: []string{"one", "two"}}, false, false},
		{"an invalid change", input{Slug: ptr("")}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			same, err := k.Same(old, tt.in)
			if (err != nil) != tt.invalid || same != tt.same {
				t.Errorf("Same = %v, %v; want %v, invalid %v", same, err, tt.same, tt.invalid)
			}
			if old.Title != "First" || old.Slug != "first" || len(old.Steps) != 1 {
				t.Errorf("Same changed old: %+v", old)
			}
		})
	}
}

// file is an item's file for Import.
type file struct{ path, slug, module, template string }

func (f file) Source() (string, string, string, string) { return f.path, f.slug, f.module, f.template }
func (f file) OwnerName() string                        { return "" }
func (f file) Input(moduleID, templateID, _ int64) input {
	return input{Slug: &f.slug, Title: ptr("Title of " + f.slug), ModuleID: &moduleID, Template: &templateID, Steps: []string{"one"}}
}

func TestImportTwiceChangesNothing(t *testing.T) {
	ctx := context.Background()
	m := newMemory()
	files := []file{{"a.yaml", "a", "basics", "debian"}, {"b.yaml", "b", "", ""}}
	c, err := authored.Import(ctx, m.kind(), files, false)
	if err != nil || c != (yamlfile.Counts{Created: 2}) {
		t.Fatalf("first import = %+v, %v; want 2 created", c, err)
	}
	c, err = authored.Import(ctx, m.kind(), files, false)
	if err != nil || c != (yamlfile.Counts{Unchanged: 2}) {
		t.Fatalf("second import = %+v, %v; want 2 unchanged", c, err)
	}
	files[1].module = "basics"
	c, err = authored.Import(ctx, m.kind(), files, false)
	if err != nil || c != (yamlfile.Counts{Updated: 1, Unchanged: 1}) {
		t.Fatalf("import of a changed file = %+v, %v; want 1 updated", c, err)
	}
}

func TestImportRefusesUnknownNames(t *testing.T) {
	tests := []struct {
		name     string
		f        file
		required bool
		want     string
	}{
		{"unknown module", file{"x.yaml", "x", "nope", ""}, false, `x.yaml: module "nope": no module`},
		{"unknown template", file{"x.yaml", "x", "", "nope"}, false, `x.yaml: sandbox template "nope": no template`},
		{"a required template missing", file{"x.yaml", "x", "", ""}, true, `x.yaml: sandbox template "": no template`},
		{"an invalid file", file{"x.yaml", "Bad Slug", "", ""}, false, "x.yaml: slug: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMemory()
			_, err := authored.Import(context.Background(), m.kind(), []file{tt.f}, tt.required)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Import = %v; want %q...", err, tt.want)
			}
			if len(m.items) != 0 {
				t.Errorf("a refused import stored %d items", len(m.items))
			}
		})
	}
}
