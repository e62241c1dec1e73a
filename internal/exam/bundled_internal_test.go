package exam

import (
	"strings"
	"testing"

	"tuxlab/content"
)

// TestBundledShortAnswers grades answers to the bundled exams' short-text
// questions whose keys were once wrong (issue 20): exam 1 took awk's nf for
// NF, which names another, empty variable, and refused bash's !!:$, the long
// form of !$.
func TestBundledShortAnswers(t *testing.T) {
	t.Parallel()
	files, err := ReadFiles(content.Curriculum())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		slug, prompt, answer string
		want                 bool
	}{
		{"shell-and-text-exam", "number of fields", "NF", true},
		{"shell-and-text-exam", "number of fields", " NF ", true},
		{"shell-and-text-exam", "number of fields", "nf", false},
		{"shell-and-text-exam", "number of fields", "Nf", false},
		{"shell-and-text-exam", "last argument of the previous command", "!$", true},
		{"shell-and-text-exam", "last argument of the previous command", "!!:$", true},
		{"shell-and-text-exam", "last argument of the previous command", "cd !!:$", true},
		{"shell-and-text-exam", "last argument of the previous command", "!!", false},
	}
	for _, c := range cases {
		q := bundledQuestion(t, files, c.slug, c.prompt)
		if q == nil {
			continue
		}
		if got := q.correct(Answer{Text: &c.answer}); got != c.want {
			t.Errorf("%s, %q: %q graded %t, want %t", c.slug, c.prompt, c.answer, got, c.want)
		}
	}
}

// bundledQuestion is the short-text question of bundled exam slug whose
// prompt (its lines joined) contains prompt, as the exam's import makes it.
func bundledQuestion(t *testing.T, files []*File, slug, prompt string) *Question {
	t.Helper()
	for _, f := range files {
		if f.Slug != slug {
			continue
		}
		var e Exam
		in := f.Input(1, 1, 0)
		if err := in.apply(&e); err != nil {
			t.Fatal(err)
		}
		for _, q := range e.Questions {
			if q.Kind == ShortText && strings.Contains(strings.Join(strings.Fields(q.Prompt), " "), prompt) {
				return q
			}
		}
	}
	t.Errorf("no short-text question of %s asks about %q", slug, prompt)
	return nil
}
