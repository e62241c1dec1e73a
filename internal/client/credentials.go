package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Credentials are what login saves: the server and a token of the user on it.
type Credentials struct {
	Server   string `json:"server"`
	Username string `json:"username"`
	Token    string `json:"access_token"`
}

// errNotLoggedIn is the answer of every command before login.
var errNotLoggedIn = errors.New("not logged in: run tuxlab login [--server URL] [USERNAME]")

// ConfigDir is the user's configuration directory as os.UserConfigDir
// finds it on Linux ($XDG_CONFIG_HOME, else $HOME/.config), read through
// getenv.
func ConfigDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return d, nil
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config"), nil
	}
	return "", errors.New("neither $XDG_CONFIG_HOME nor $HOME is set: set HOME to keep your tuxlab login")
}

// credentialsPath is DIR/tuxlab/credentials.json.
func credentialsPath(getenv func(string) string) (string, error) {
	dir, err := ConfigDir(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "tuxlab", "credentials.json"), nil
}

// LoadCredentials reads the saved login, refusing a file that others may
// read (the token is as good as the password until it expires).
func LoadCredentials(getenv func(string) string) (*Credentials, error) {
	path, err := credentialsPath(getenv)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNotLoggedIn
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s may be read by other users (mode %04o): run chmod 600 %s, or tuxlab logout and tuxlab login again", path, fi.Mode().Perm(), path)
	}
	var c Credentials
	if err := json.NewDecoder(f).Decode(&c); err != nil || c.Token == "" || c.Server == "" {
		return nil, fmt.Errorf("%s is not a tuxlab login: run tuxlab login again", path)
	}
	return &c, nil
}

// SaveCredentials writes c with mode 0600 in a directory of mode 0700,
// through a temporary file renamed into place.
func SaveCredentials(getenv func(string) string, c *Credentials) (string, error) {
	path, err := credentialsPath(getenv)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".credentials-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600 already; said again for the reader.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}

// removeCredentials deletes the saved login; none saved is not an error.
func removeCredentials(getenv func(string) string) error {
	path, err := credentialsPath(getenv)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// loggedIn returns a client with the saved login.
func loggedIn(env Env) (*Client, *Credentials, error) {
	creds, err := LoadCredentials(env.Getenv)
	if err != nil {
		return nil, nil, err
	}
	c, err := NewClient(env, creds.Server, creds.Token)
	return c, creds, err
}
