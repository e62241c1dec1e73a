package exam

import (
	"slices"
	"testing"
)

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

func TestAttemptOrder(t *testing.T) {
	one, two := 1, 2
	q := &Question{ID: 7, Kind: SingleChoice, Options: []string{"a", "b", "c"}, Key: Key{Answer: &two}}
	m := &Question{ID: 8, Kind: MultipleChoice, Options: []string{"a", "b", "c"}, Key: Key{Answers: []int{0, 2}}}
	cases := []struct {
		name  string
		order map[int64][]int
		shown []string
		right Answer // in the shown order
		wrong Answer
	}{
		{"stored order", map[int64][]int{7: {2, 0, 1}, 8: {2, 0, 1}}, []string{"c", "a", "b"},
			Answer{Choice: new(0)}, Answer{Choice: &two}},
		{"no order: authored", nil, []string{"a", "b", "c"}, Answer{Choice: &two}, Answer{Choice: new(0)}},
		{"not a permutation: authored", map[int64][]int{7: {0, 0, 1}}, []string{"a", "b", "c"}, Answer{Choice: &two}, Answer{Choice: &one}},
		{"options changed in number: authored", map[int64][]int{7: {1, 0}}, []string{"a", "b", "c"}, Answer{Choice: &two}, Answer{Choice: &one}},
	}
	for _, c := range cases {
		a := &Attempt{Order: c.order}
		if got := a.Shown(q).Options; !slices.Equal(got, c.shown) {
			t.Errorf("%s: shown %v, want %v", c.name, got, c.shown)
		}
		if a.Shown(q).Key.Answer != nil {
			t.Errorf("%s: the shown question carries its key", c.name)
		}
		if !q.correct(a.authored(q, c.right)) || q.correct(a.authored(q, c.wrong)) {
			t.Errorf("%s: right %v or wrong %v graded the wrong way", c.name, *c.right.Choice, *c.wrong.Choice)
		}
	}
	// Multiple choice: the shown indexes of a and c under the order [2, 0, 1] are 1 and 0.
	a := &Attempt{Order: map[int64][]int{8: {2, 0, 1}}}
	if !m.correct(a.authored(m, Answer{Choices: []int{1, 0}})) || m.correct(a.authored(m, Answer{Choices: []int{0, 2}})) {
		t.Error("multiple choice is not graded in the shown order")
	}
}

func TestDrawOrder(t *testing.T) {
	e := &Exam{Questions: []*Question{{ID: 1, Kind: SingleChoice, Options: make([]string, 4)},
		{ID: 2, Kind: ShortText}, {ID: 3, Kind: MultipleChoice, Options: make([]string, 5)}, {ID: 4, Kind: Practical}}}
	reversed := func(n int) []int {
		p := make([]int, n)
		for i := range p {
			p[i] = n - 1 - i
		}
		return p
	}
	got := drawOrder(e, reversed)
	if len(got) != 2 || !slices.Equal(got[1], []int{3, 2, 1, 0}) || !slices.Equal(got[3], []int{4, 3, 2, 1, 0}) {
		t.Fatalf("orders %v", got)
	}
}
