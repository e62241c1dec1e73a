package profile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"tuxlab/internal/activity"
)

// memStore keeps one profile; fail makes UpdateProfile fail after change ran.
type memStore struct {
	p    Profile
	fail error
}

func (m *memStore) FindProfile(context.Context, int64) (*Profile, error) { p := m.p; return &p, nil }

func (m *memStore) UpdateProfile(_ context.Context, _ int64, change func(*Profile) error) (*Profile, error) {
	p := m.p
	if err := change(&p); err != nil {
		return nil, err
	}
	if m.fail != nil {
		return nil, m.fail
	}
	m.p = p
	return &p, nil
}

// failingLog runs fn as one transaction would and fails every Record with err.
type failingLog struct{ err error }

func (l failingLog) InTx(ctx context.Context, fn func(context.Context) error) error { return fn(ctx) }
func (l failingLog) Record(context.Context, *activity.Event) error                  { return l.err }

func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "avatars"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestSetAvatarCleansUpAfterFailure: the new file is written before the row
// changes and removed again when the transaction fails; the old one is
// removed only once the change has committed.
func TestSetAvatarCleansUpAfterFailure(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := &memStore{p: Profile{ID: 1, Username: "alice"}}
	img := encodePNG(t, halves(20, 20))

	ok := NewService(store, nil, activity.Discard, NewDirStorage(dir), Options{})
	p, err := ok.SetAvatar(ctx, 1, img)
	if err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); len(got) != 1 || got[0] != p.Avatar {
		t.Fatalf("files %v, want %s", got, p.Avatar)
	}

	boom := errors.New("boom")
	for name, s := range map[string]*Service{
		"store fails":  NewService(&memStore{p: store.p, fail: boom}, nil, activity.Discard, NewDirStorage(dir), Options{}),
		"record fails": NewService(&memStore{p: store.p}, nil, failingLog{boom}, NewDirStorage(dir), Options{}), // its change is rolled back
	} {
		if _, err := s.SetAvatar(ctx, 1, img); !errors.Is(err, boom) {
			t.Fatalf("%s: %v", name, err)
		}
		if got := files(t, dir); len(got) != 1 || got[0] != p.Avatar {
			t.Fatalf("%s: files %v, want only the committed %s", name, got, p.Avatar)
		}
	}
	if _, err := NewService(&memStore{p: store.p}, nil, failingLog{boom}, NewDirStorage(dir), Options{}).DeleteAvatar(ctx, 1); !errors.Is(err, boom) {
		t.Fatalf("delete: %v", err)
	}
	if got := files(t, dir); len(got) != 1 {
		t.Fatalf("a failed delete removed the file: %v", got)
	}

	p2, err := ok.SetAvatar(ctx, 1, img)
	if err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); len(got) != 1 || got[0] != p2.Avatar || p2.Avatar == p.Avatar {
		t.Fatalf("after replacing: %v, want only %s", got, p2.Avatar)
	}
}
