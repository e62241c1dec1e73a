package class_test

import (
	"strings"
	"testing"

	"tuxlab/internal/class"
)

// TestNewCode: codes have CodeLen characters of the alphabet, which has no
// look-alikes, and two draws differ.
func TestNewCode(t *testing.T) {
	if strings.ContainsAny(class.CodeAlphabet, "0O1IL") {
		t.Fatalf("the alphabet %q has look-alikes", class.CodeAlphabet)
	}
	seen := map[string]bool{}
	for range 200 {
		code, err := class.NewCode()
		if err != nil {
			t.Fatal(err)
		}
		if len(code) != class.CodeLen || strings.Trim(code, class.CodeAlphabet) != "" {
			t.Fatalf("code %q", code)
		}
		if seen[code] {
			t.Fatalf("code %q drawn twice in 200 draws", code)
		}
		seen[code] = true
	}
}

func TestNormalizeCode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"K7MPQ2XA", "K7MPQ2XA"},
		{"k7mp-q2xa", "K7MPQ2XA"},
		{" K7MP Q2XA\t", "K7MPQ2XA"},
		{"", ""},
	} {
		if got := class.NormalizeCode(tc.in); got != tc.want {
			t.Errorf("NormalizeCode(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseSort(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{{"name", true}, {"progress", true}, {"last_active", true}, {"", false}, {"Name", false}, {"score", false}} {
		if _, ok := class.ParseSort(tc.in); ok != tc.ok {
			t.Errorf("ParseSort(%q) ok = %v, want %v", tc.in, ok, tc.ok)
		}
	}
}
