package exam

import "testing"

func TestCorrect(t *testing.T) {
	one, two := 1, 2
	text := func(s string) *string { return &s }
	single := &Question{Kind: SingleChoice, Options: []string{"a", "b", "c"}, Key: Key{Answer: &one}}
	multi := &Question{Kind: MultipleChoice, Options: []string{"a", "b", "c"}, Key: Key{Answers: []int{2, 0}}}
	short := &Question{Kind: ShortText, Key: Key{Accept: []string{"chmod  750 file", "0750"}}}
	strict := &Question{Kind: ShortText, Key: Key{Accept: []string{"LANG"}, CaseSensitive: true}}
	cases := []struct {
		name string
		q    *Question
		a    Answer
		want bool
	}{
		{"single right", single, Answer{Choice: &one}, true},
		{"single wrong", single, Answer{Choice: &two}, false},
		{"single unanswered", single, Answer{}, false},
		{"multiple, any order", multi, Answer{Choices: []int{0, 2}}, true},
		{"multiple, repeated", multi, Answer{Choices: []int{2, 0, 2}}, true},
		{"multiple, a subset", multi, Answer{Choices: []int{0}}, false},
		{"multiple, one too many", multi, Answer{Choices: []int{0, 1, 2}}, false},
		{"short, case and spaces", short, Answer{Text: text("  CHMOD 750\tfile ")}, true},
		{"short, another accepted", short, Answer{Text: text("0750")}, true},
		{"short, wrong", short, Answer{Text: text("750")}, false},
		{"short, case-sensitive", strict, Answer{Text: text("lang")}, false},
		{"short, case-sensitive right", strict, Answer{Text: text(" LANG ")}, true},
	}
	for _, c := range cases {
		if got := c.q.correct(c.a); got != c.want {
			t.Errorf("%s: correct = %t, want %t", c.name, got, c.want)
		}
	}
}
