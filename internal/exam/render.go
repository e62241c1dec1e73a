package exam

import "tuxlab/internal/lesson"

// An exam's Markdown, rendered as lessons are (lesson.HTML: GitHub-flavoured
// Markdown, sanitised), so that pages insert the HTML and need no Markdown
// dialect of their own.

// DescriptionHTML is the exam's description as sanitised HTML.
func (e *Exam) DescriptionHTML() string { return lesson.HTML(e.Description) }

// PromptHTML is the question's prompt as sanitised HTML.
func (q *Question) PromptHTML() string { return lesson.HTML(q.Prompt) }

// ExplanationHTML is the question's explanation as sanitised HTML.
func (q *Question) ExplanationHTML() string { return lesson.HTML(q.Explanation) }
