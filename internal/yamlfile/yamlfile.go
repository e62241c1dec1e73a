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
