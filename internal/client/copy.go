package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxCopyBytes is the largest file cp moves either way: cp goes through a
// terminal as base64 text, which suits scripts, configuration and logs,
// not disk images.
const MaxCopyBytes = 16 << 20

// copyTimeout bounds one whole copy.
const copyTimeout = 10 * time.Minute

// Copy copies a file between this machine and a sandbox: exactly one of
// src and dst is ID:PATH, the sandbox side.
//
// The API has no file route: cp opens a terminal on the sandbox, as the
// user's own shell, and runs base64 and head in it (every sandbox image has
// them), so a copy may do exactly what the user may do by typing, as that
// user. Markers the shell computes ($((N+1))) frame the transfer, so the
// echo of the command line is never taken for them.
func Copy(ctx context.Context, env Env, src, dst string) error {
	sid, spath, sremote := parseRemote(src)
	did, dpath, dremote := parseRemote(dst)
	if sremote == dremote {
		return errors.New("name the sandbox side of exactly one of SRC and DST as ID:PATH, such as tuxlab cp notes.txt 12:/home/learner/")
	}
	c, _, err := loggedIn(env)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, copyTimeout)
	defer cancel()
	if dremote {
		return c.upload(ctx, env, spath, did, dpath)
	}
	return c.download(ctx, env, sid, spath, dpath)
}

// parseRemote splits ID:PATH; a local path (also one with a colon, such
// as ./a:b) has remote false.
func parseRemote(s string) (int64, string, bool) {
	idText, path, ok := strings.Cut(s, ":")
	if !ok || path == "" {
		return 0, s, false
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id <= 0 {
		return 0, s, false
	}
	return id, path, true
}

// quote makes s one single-quoted word for a POSIX shell.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// session is a terminal whose output is collected, for copies.
type session struct {
	t    *terminal
	mu   sync.Mutex
	out  bytes.Buffer
	more chan struct{}
	id   int64
	// base is a random number; the markers are base+1 and base+2, which only
	// the shell's arithmetic prints.
	base int64
}

func (c *Client) openSession(ctx context.Context, id int64) (*session, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1e12))
	if err != nil {
		return nil, err
	}
	s := &session{more: make(chan struct{}), id: id, base: n.Int64() + 1e12}
	t, err := c.dialTerminal(ctx, id, 1000, 50, func(b []byte) {
		s.mu.Lock()
		s.out.Write(b)
		close(s.more)
		s.more = make(chan struct{})
		s.mu.Unlock()
	}, nil)
	if err != nil {
		return nil, err
	}
	s.t = t
	return s, nil
}

// marker is the text the shell prints for $((base+k)) followed by name.
func (s *session) marker(k int64, name string) string {
	return fmt.Sprintf("tuxlab-cp-%d-%s", s.base+k, name)
}

// markerCmd is the shell text that prints marker(k, name).
func (s *session) markerCmd(k int64, name string) string {
	return fmt.Sprintf("echo tuxlab-cp-$((%d+%d))-%s", s.base, k, name)
}

// await waits until the output holds marker and returns the output from
// after the line that marker ends; limit bounds the output kept.
func (s *session) await(ctx context.Context, marker string, limit int) (string, error) {
	for {
		s.mu.Lock()
		out, more := s.out.String(), s.more
		s.mu.Unlock()
		if i := strings.Index(out, marker); i >= 0 {
			return out[i+len(marker):], nil
		}
		if len(out) > limit {
			return "", fmt.Errorf("the sandbox sent more than %d bytes: the file is too large for tuxlab cp (at most %d MiB)", limit, MaxCopyBytes>>20)
		}
		select {
		case <-more:
		case <-s.t.done:
			_, reason := s.t.ended()
			if reason == "" {
				reason = "the shell ended"
			}
			return "", fmt.Errorf("copy: %s", s.t.closedWhy(s.id, reason))
		case <-ctx.Done():
			return "", fmt.Errorf("the copy took too long: %w", ctx.Err())
		}
	}
}

// between is the text of out up to marker, without the rest of the
// marker's own line before it; ok is false when marker is not in out.
func between(out, marker string) (string, bool) {
	i := strings.Index(out, marker)
	if i < 0 {
		return "", false
	}
	return out[:i], true
}

// afterLine drops the rest of the current line (the end of a marker's line).
func afterLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return ""
}

// upload writes local file src to path in sandbox id; a path ending in /
// or naming a directory gets the file's name.
func (c *Client) upload(ctx context.Context, env Env, src string, id int64, path string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if len(data) > MaxCopyBytes {
		return fmt.Errorf("%s has %d bytes: tuxlab cp moves at most %d MiB", src, len(data), MaxCopyBytes>>20)
	}
	if strings.ContainsAny(path, "\n\r") {
		return errors.New("a sandbox path with a line break cannot be copied to")
	}
	enc := lines(base64.StdEncoding.EncodeToString(data))
	s, err := c.openSession(ctx, id)
	if err != nil {
		return err
	}
	defer s.t.hangup()
	// Echo off first, so the data typed next is not printed back; the
	// target is tried before the data comes, and whatever happens to base64
	// the data is read to its end (cat), never left for the shell to run.
	cmd := fmt.Sprintf("stty -echo; d=%s; [ -d \"$d\" ] && d=\"$d\"/%s; %s; head -c %d | { base64 -d > \"$d\" && %s || cat > /dev/null; }; %s\r",
		quote(path), quote(filepath.Base(src)), s.markerCmd(1, "ready"), len(enc), s.markerCmd(1, "ok"), s.markerCmd(2, "done"))
	if err := s.t.write(ctx, []byte(cmd)); err != nil {
		return err
	}
	if _, err := s.await(ctx, s.marker(1, "ready"), 1<<20); err != nil {
		return err
	}
	if err := s.t.write(ctx, []byte(enc)); err != nil {
		return err
	}
	if _, err := s.await(ctx, s.marker(2, "done"), 1<<20); err != nil {
		return err
	}
	s.mu.Lock()
	out := s.out.String()
	s.mu.Unlock()
	_, afterReady, _ := strings.Cut(out, s.marker(1, "ready"))
	result, _ := between(afterReady, s.marker(2, "done"))
	if !strings.Contains(result, s.marker(1, "ok")) {
		return fmt.Errorf("copy to sandbox %d: %s", id, shellMessage(afterLine(result)))
	}
	fmt.Fprintf(env.Err, "copied %d bytes to sandbox %d\n", len(data), id)
	return nil
}

// lines cuts base64 text into lines of 76 characters, each ending in a
// newline, as a terminal's line discipline takes them.
func lines(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		n := min(len(s), 76)
		b.WriteString(s[:n])
		b.WriteByte('\n')
		s = s[n:]
	}
	return b.String()
}

// download writes path in sandbox id to local dst; a dst that is a
// directory gets the file's name.
func (c *Client) download(ctx context.Context, env Env, id int64, path, dst string) error {
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		dst = filepath.Join(dst, filepath.Base(path))
	}
	if strings.ContainsAny(path, "\n\r") {
		return errors.New("a sandbox path with a line break cannot be copied from")
	}
	s, err := c.openSession(ctx, id)
	if err != nil {
		return err
	}
	defer s.t.hangup()
	cmd := fmt.Sprintf("%s; [ -f %s ] && base64 %s && %s; %s\r",
		s.markerCmd(1, "begin"), quote(path), quote(path), s.markerCmd(1, "ok"), s.markerCmd(2, "done"))
	if err := s.t.write(ctx, []byte(cmd)); err != nil {
		return err
	}
	limit := MaxCopyBytes/3*4*80/76 + 1<<16
	if _, err := s.await(ctx, s.marker(2, "done"), limit); err != nil {
		return err
	}
	s.mu.Lock()
	out := s.out.String()
	s.mu.Unlock()
	_, afterBegin, _ := strings.Cut(out, s.marker(1, "begin"))
	afterBegin = afterLine(afterBegin)
	result, _ := between(afterBegin, s.marker(2, "done"))
	text, ok := between(result, s.marker(1, "ok"))
	if !ok {
		msg := shellMessage(result)
		if msg == "" {
			msg = fmt.Sprintf("%s is not a regular file there", path)
		}
		return fmt.Errorf("copy from sandbox %d: %s", id, msg)
	}
	data, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(text), ""))
	if err != nil {
		return fmt.Errorf("copy from sandbox %d: the file's text came back damaged: %w", id, err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(env.Err, "copied %d bytes from sandbox %d to %s\n", len(data), id, dst)
	return nil
}

// shellMessage is what the shell printed, trimmed to its lines of text.
func shellMessage(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}
