package yamlfile

import (
	"errors"
	"testing"

	"tuxlab/internal/errs"
)

func TestProblems(t *testing.T) {
	tests := []struct {
		name string
		add  func(*Problems)
		want string // "" for no error
	}{
		{"none", func(*Problems) {}, ""},
		{"distinct slugs", func(p *Problems) { p.Slug("a.yaml", "a"); p.Slug("b.yaml", "b") }, ""},
		{"a slug twice", func(p *Problems) { p.Slug("a.yaml", "x"); p.Slug("b.yaml", "x") },
			"exams have 1 problem(s):\n  b.yaml: slug \"x\" already used by a.yaml"},
		{"every kind of problem, in order", func(p *Problems) {
			p.Add("a.yaml", errors.New("yaml: line 2: bad"))
			p.Add("b.yaml", errs.Field([]any{"questions", 0, "prompt"}, "A prompt is required", "missing"))
			p.Addf("%s: module %q differs", "c.yaml", "m")
		}, "exams have 3 problem(s):\n  a.yaml: yaml: line 2: bad\n  b.yaml: questions.0.prompt: A prompt is required\n  c.yaml: module \"m\" differs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Problems
			tt.add(&p)
			err := p.Err("exams")
			if (err == nil) != (tt.want == "") || (err != nil && err.Error() != tt.want) {
				t.Errorf("Err = %v; want %q", err, tt.want)
			}
		})
	}
}

func TestCountsDescribe(t *testing.T) {
	got := Counts{Created: 1, Updated: 2, Unchanged: 3}.Describe("laboratories")
	if want := "laboratories: 1 created, 2 updated, 3 unchanged"; got != want {
		t.Errorf("Describe = %q; want %q", got, want)
	}
}
