package lesson

import (
	"bytes"
	"html"
	"regexp"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
)

// Renderer turns lesson Markdown into HTML that is safe to insert into a page.
// goldmark already drops raw HTML (it is not run in unsafe mode); bluemonday's
// policy is the second wall, so a slip in one never reaches a learner.
type Renderer struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
}

// NewRenderer returns a renderer for GitHub-flavoured Markdown with heading ids.
func NewRenderer() *Renderer {
	p := bluemonday.UGCPolicy()
	// Keep the language of fenced code blocks and the ids of headings for anchors.
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[a-zA-Z0-9_+-]+$`)).OnElements("code")
	p.AllowAttrs("id").Matching(regexp.MustCompile(`^[a-z0-9-]+$`)).OnElements("h1", "h2", "h3", "h4", "h5", "h6")
	return &Renderer{
		md: goldmark.New(
			goldmark.WithExtensions(extension.GFM),
			goldmark.WithParserOptions(parser.WithAutoHeadingID()),
		),
		policy: p,
	}
}

// Render converts markdown to sanitised HTML.
func (r *Renderer) Render(markdown string) (string, error) {
	var buf bytes.Buffer
	if err := r.md.Convert([]byte(markdown), &buf); err != nil {
		return "", err
	}
	return r.policy.Sanitize(buf.String()), nil
}

// shared renders the Markdown that is rendered as it is served (labs' and
// exams'); goldmark and bluemonday are safe for concurrent use once built.
var shared = NewRenderer()

// HTML renders markdown to sanitised HTML with the lesson renderer, for text
// rendered on each answer rather than stored rendered (the descriptions,
// hints, prompts and explanations of labs and exams). Rendering into memory
// does not fail; if it ever did, the text would come back escaped in a
// paragraph rather than be lost.
func HTML(markdown string) string {
	out, err := shared.Render(markdown)
	if err != nil {
		return "<p>" + html.EscapeString(markdown) + "</p>"
	}
	return out
}
