// Package content holds tuxlab's bundled curriculum, embedded in the binary
// so that a fresh install starts with real lessons. The file format is
// described in docs/curriculum-format.md.
package content

import (
	"embed"
	"io/fs"
)

//go:embed curriculum
var files embed.FS

// Curriculum returns the bundled curriculum: one directory per module.
func Curriculum() fs.FS {
	sub, err := fs.Sub(files, "curriculum")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}
