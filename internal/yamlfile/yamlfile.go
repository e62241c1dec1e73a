// Package yamlfile reads and writes the YAML files of laboratories and exams
// strictly: a misspelt key is an error, not a silently missing field.
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"tuxlab/internal/errs"
)

// Read decodes the YAML file p of fsys into v, refusing unknown keys.
func Read(fsys fs.FS, p string, v any) error {
	b, err := fs.ReadFile(fsys, p)
	if err != nil {
		return err
	}
	return Decode(b, v)
}

// Decode decodes one YAML document into v, refusing unknown keys.
func Decode(b []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// Write writes v as YAML to p, creating its directory. Multi-line strings
// (scripts, descriptions) come out as literal blocks.
func Write(p string, v any) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	return os.WriteFile(p, b.Bytes(), 0o644)
}

// Describe renders validation problems as "field.path: message" lines, for
// messages about a file.
func Describe(err error) string {
	var e *errs.Error
	if !errors.As(err, &e) || len(e.Fields) == 0 {
		return err.Error()
	}
	var lines []string
	for _, fe := range e.Fields {
		var parts []string
		for _, l := range fe.Loc {
			parts = append(parts, fmt.Sprint(l))
		}
		lines = append(lines, strings.Join(parts, ".")+": "+fe.Msg)
	}
	return strings.Join(lines, "; ")
}

// Problems collects what is wrong with a set of files, so that every
// problem is reported at once, before anything is written.
type Problems struct {
	list []string
	seen map[string]string // slug → the file that uses it
}

// Add records a problem of file p.
func (ps *Problems) Add(p string, err error) {
	ps.list = append(ps.list, p+": "+Describe(err))
}

// Addf records a problem as format says.
func (ps *Problems) Addf(format string, args ...any) {
	ps.list = append(ps.list, fmt.Sprintf(format, args...))
}

// Slug records that file p uses slug; a second file with it is a problem.
func (ps *Problems) Slug(p, slug string) {
	if ps.seen == nil {
		ps.seen = map[string]string{}
	}
	if prev, ok := ps.seen[slug]; ok {
		ps.list = append(ps.list, fmt.Sprintf("%s: slug %q already used by %s", p, slug, prev))
	}
	ps.seen[slug] = p
}

// Err is nil without problems, else one error listing them all, for the
// files of items (exams, laboratories).
func (ps *Problems) Err(items string) error {
	if len(ps.list) == 0 {
		return nil
	}
	return fmt.Errorf("%s have %d problem(s):\n  %s", items, len(ps.list), strings.Join(ps.list, "\n  "))
}
