package profile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"tuxlab/internal/errs"
)

// ErrAvatarNotFound is an avatar name that no file has.
var ErrAvatarNotFound = errs.E(errs.NotFound, "Not Found")

// Storage keeps avatar files by name. The service only passes names that
// ValidAvatarName accepts; implementations check them again.
type Storage interface {
	// Put stores data under name, whole or not at all.
	Put(ctx context.Context, name string, data []byte) error
	// Open opens the file name for reading; a missing one is ErrAvatarNotFound.
	Open(ctx context.Context, name string) (fs.File, error)
	// Delete removes the file name; a missing one is not an error.
	Delete(ctx context.Context, name string) error
}

// DirStorage keeps avatar files in one directory, $TUXLAB_DATA_DIR/avatars,
// created on the first Put. Every access goes through an os.Root on that
// directory, so no name can reach outside it, even through a symbolic link.
type DirStorage struct{ dir string }

var _ Storage = (*DirStorage)(nil)

// NewDirStorage returns the storage in dataDir/avatars.
func NewDirStorage(dataDir string) *DirStorage {
	return &DirStorage{dir: filepath.Join(dataDir, "avatars")}
}

// Dir is the directory the files are in.
func (d *DirStorage) Dir() string { return d.dir }

func (d *DirStorage) root(create bool) (*os.Root, error) {
	if create {
		if err := os.MkdirAll(d.dir, 0o700); err != nil {
			return nil, fmt.Errorf("create the avatar directory: %w", err)
		}
	}
	return os.OpenRoot(d.dir)
}

func checkName(name string) error {
	if !ValidAvatarName(name) {
		return fmt.Errorf("invalid avatar file name %q", name)
	}
	return nil
}

// Put writes data to a temporary file, syncs it and renames it into place, so
// a reader never sees half a file.
func (d *DirStorage) Put(_ context.Context, name string, data []byte) (err error) {
	if err := checkName(name); err != nil {
		return err
	}
	root, err := d.root(true)
	if err != nil {
		return err
	}
	defer root.Close()
	tmp := "." + name + ".tmp"
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write avatar: %w", err)
	}
	defer func() {
		if err != nil {
			root.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write avatar: %w", err)
	}
	if err = root.Rename(tmp, name); err != nil {
		return fmt.Errorf("write avatar: %w", err)
	}
	return nil
}

// Open opens a regular file of the directory.
func (d *DirStorage) Open(_ context.Context, name string) (fs.File, error) {
	if checkName(name) != nil {
		return nil, ErrAvatarNotFound
	}
	root, err := d.root(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrAvatarNotFound
	}
	if err != nil {
		return nil, err
	}
	defer root.Close() // the file stays open
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrAvatarNotFound
	}
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, ErrAvatarNotFound
	}
	return f, nil
}

// Delete removes a file of the directory.
func (d *DirStorage) Delete(_ context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	root, err := d.root(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove avatar: %w", err)
	}
	return nil
}
