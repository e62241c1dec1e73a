package client

import (
	"os/exec"
	"strings"
	"testing"
)

func TestParseRemote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		arg    string
		id     int64
		path   string
		remote bool
	}{
		{"12:/tmp/", 12, "/tmp/", true},
		{"12:notes.txt", 12, "notes.txt", true},
		{"12:/a:b", 12, "/a:b", true},
		{"notes.txt", 0, "notes.txt", false},
		{"./12:/tmp", 0, "./12:/tmp", false}, // a local path with a colon
		{"12:", 0, "12:", false},
		{"0:/tmp", 0, "0:/tmp", false},
		{"-3:/tmp", 0, "-3:/tmp", false},
		{"C:/Users", 0, "C:/Users", false},
	} {
		id, path, remote := parseRemote(tc.arg)
		if id != tc.id || path != tc.path || remote != tc.remote {
			t.Errorf("parseRemote(%q) = %d %q %v, want %d %q %v", tc.arg, id, path, remote, tc.id, tc.path, tc.remote)
		}
	}
}

// TestQuote runs the quoted words through a real shell.
func TestQuote(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"plain", "it's", "$HOME", "a b", `back\slash`, "'", "''", "`id`", "; rm -rf x"} {
		out, err := exec.Command("sh", "-c", "printf %s "+quote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("quote(%q) = %s: the shell read %q (%v)", s, quote(s), out, err)
		}
	}
}

func TestLines(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("A", 76*2+5)
	got := lines(text)
	want := strings.Repeat("A", 76) + "\n" + strings.Repeat("A", 76) + "\n" + "AAAAA\n"
	if got != want || lines("") != "" {
		t.Fatalf("lines: %q", got)
	}
}

func TestDetailOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, want string }{
		{`{"detail":"Container not found"}`, "Container not found"},
		{`{"detail":[{"loc":["body","username"],"msg":"Field required","type":"missing"},{"loc":["query","id"],"msg":"not a number"}]}`, "username: Field required; id: not a number"},
		{`not json`, ""},
		{`{"other":1}`, ""},
	} {
		if got := detailOf([]byte(tc.body)); got != tc.want {
			t.Errorf("detailOf(%s) = %q, want %q", tc.body, got, tc.want)
		}
	}
}
