package lesson

import (
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"tuxlab/content"
)

func TestRenderSanitises(t *testing.T) {
	r := NewRenderer()
	tests := []struct {
		name, md  string
		forbidden []string
		want      []string
	}{
		{"script tag", "Hello\n\n<script>alert('x')</script>\n", []string{"<script", "alert("}, []string{"<p>Hello</p>"}},
		{"inline script", "text <script>alert(1)</script> more", []string{"<script"}, nil},
		{"event handler", `<img src="x" onerror="alert(1)">`, []string{"onerror"}, nil},
		{"javascript link", "[click](javascript:alert(1))", []string{"javascript:"}, []string{"click"}},
		{"iframe", `<iframe src="https://evil.example.net"></iframe>`, []string{"<iframe"}, nil},
		{"style attribute", `<p style="position:fixed">x</p>`, []string{"style="}, nil},
		{"code keeps its language", "```console\n$ ls -l\n```\n", []string{"<script"}, []string{`<code class="language-console">`, "$ ls -l"}},
		{"code shows html as text", "```html\n<script>x</script>\n```\n", nil, []string{"&lt;script&gt;"}},
		{"tables", "| a | b |\n|---|---|\n| 1 | 2 |\n", nil, []string{"<table>", "<td>1</td>"}},
		{"heading ids", "## Try it\n", nil, []string{`<h2 id="try-it">Try it</h2>`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			html, err := r.Render(tt.md)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.forbidden {
				if strings.Contains(html, f) {
					t.Errorf("%q survived: %s", f, html)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(html, w) {
					t.Errorf("%q missing: %s", w, html)
				}
			}
		})
	}
}

func TestReadCurriculumRejects(t *testing.T) {
	mod := "---\nslug: m\ntitle: M\norder: 1\n---\nAbout M.\n"
	theme := func(slug string) string {
		return "---\nslug: " + slug + "\ntitle: T\norder: 1\nestimated_minutes: 10\n---\n# T\n"
	}
	tests := []struct {
		name string
		fs   fstest.MapFS
		want string
	}{
		{"empty", fstest.MapFS{}, "no module directories"},
		{"no module.md", fstest.MapFS{"01-m/01-t.md": {Data: []byte(theme("t"))}}, "missing module.md"},
		{"no front matter", fstest.MapFS{"01-m/module.md": {Data: []byte("# M\n")}}, "must start with a ---"},
		{"unclosed front matter", fstest.MapFS{"01-m/module.md": {Data: []byte("---\nslug: m\n")}}, "not closed"},
		{"unknown key", fstest.MapFS{"01-m/module.md": {Data: []byte("---\nslug: m\ntitle: M\norder: 1\nauthor: x\n---\n")}}, `unknown front matter key "author"`},
		{"missing key", fstest.MapFS{"01-m/module.md": {Data: []byte("---\nslug: m\ntitle: M\n---\n")}}, `lacks "order"`},
		{"bad slug", fstest.MapFS{"01-m/module.md": {Data: []byte("---\nslug: Bad Slug\ntitle: M\norder: 1\n---\n")}}, "Slug must be"},
		{"bad minutes", fstest.MapFS{"01-m/module.md": {Data: []byte(mod)}, "01-m/01-t.md": {Data: []byte(strings.Replace(theme("t"), "10", "ten", 1))}}, "estimated_minutes must be an integer"},
		{"duplicate slug", fstest.MapFS{"01-m/module.md": {Data: []byte(mod)}, "01-m/01-t.md": {Data: []byte(theme("t"))}, "01-m/02-t.md": {Data: []byte(theme("t"))}}, `slug "t" already used`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadCurriculum(tt.fs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

// TestBundledCurriculum holds the shipped lessons to the bar the product sets:
// at least 10 modules and 50 themes, each a real lesson of at least 300 words
// with commands and a "Try it" exercise, and no raw HTML.
func TestBundledCurriculum(t *testing.T) {
	c, err := ReadCurriculum(content.Curriculum())
	if err != nil {
		t.Fatal(err)
	}
	themes := 0
	words := regexp.MustCompile(`\S+`)
	for _, m := range c.Modules {
		if len(m.Themes) < 3 {
			t.Errorf("module %s has %d themes", m.Slug, len(m.Themes))
		}
		if m.Description == "" {
			t.Errorf("module %s has no description", m.Slug)
		}
		for _, th := range m.Themes {
			themes++
			if n := len(words.FindAllString(th.Markdown, -1)); n < 300 {
				t.Errorf("%s: %d words, want at least 300", th.Path, n)
			}
			if !strings.Contains(th.Markdown, "\n## Try it") {
				t.Errorf("%s: no \"## Try it\" section", th.Path)
			}
			if !strings.Contains(th.Markdown, "```") {
				t.Errorf("%s: no command examples", th.Path)
			}
			if !strings.HasPrefix(th.Markdown, "# ") {
				t.Errorf("%s: does not start with its title", th.Path)
			}
		}
	}
	if len(c.Modules) < 10 || themes < 50 {
		t.Fatalf("%d modules and %d themes, want at least 10 and 50", len(c.Modules), themes)
	}
	// Every topic the product promises has a module.
	for _, slug := range []string{"shell-basics", "text-processing", "users-groups", "permissions", "processes", "packages",
		"systemd", "logs", "scheduling", "networking", "storage", "ssh", "scripting", "troubleshooting"} {
		found := false
		for _, m := range c.Modules {
			found = found || m.Slug == slug
		}
		if !found {
			t.Errorf("no module %q", slug)
		}
	}
}

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{"Users and Groups": "users-and-groups", "  ip & ss: sockets!": "ip-ss-sockets", "Ünïcode": "n-code"} {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
}
