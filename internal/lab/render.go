package lab

import "tuxlab/internal/lesson"

// A lab's Markdown, rendered as lessons are (lesson.HTML: GitHub-flavoured
// Markdown, sanitised), so that pages insert the HTML and need no Markdown
// dialect of their own.

// DescriptionHTML is the lab's description as sanitised HTML.
func (l *Lab) DescriptionHTML() string { return lesson.HTML(l.Description) }

// DescriptionHTML is the task's description as sanitised HTML.
func (t *Task) DescriptionHTML() string { return lesson.HTML(t.Description) }

// HintHTML is the task's hint as sanitised HTML.
func (t *Task) HintHTML() string { return lesson.HTML(t.Hint) }
