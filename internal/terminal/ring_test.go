package terminal

import (
	"bytes"
	"strings"
	"testing"
)

// TestRing: the ring keeps the last bytes written, whatever the sizes of the
// writes, and a replay that lost older output starts after a line break.
func TestRing(t *testing.T) {
	tests := []struct {
		name   string
		size   int
		writes []string
		want   string
	}{
		{"empty", 8, nil, ""},
		{"fits", 8, []string{"ab", "cd"}, "abcd"},
		{"exactly full", 8, []string{"abcd", "efgh"}, "abcdefgh"},
		{"wraps, no line break: the last bytes", 8, []string{"abcdef", "ghij"}, "cdefghij"},
		{"wraps: starts after the first line break", 8, []string{"abc\ndef", "gh\nij"}, "ij"},
		{"one write larger than the ring", 4, []string{"abcdefgh"}, "efgh"},
		{"many small writes", 5, []string{"a", "b", "c", "d", "e", "f", "g"}, "cdefg"},
		{"wraps around the end twice", 6, []string{"abcd", "efgh", "ijkl"}, "ghijkl"},
		{"zero size keeps nothing", 0, []string{"abc"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRing(tt.size)
			for _, w := range tt.writes {
				r.Write([]byte(w))
			}
			if got := string(r.Bytes()); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRingKeepsTheReplaySize: past its size, the ring holds ReplaySize bytes
// at most, the latest.
func TestRingKeepsTheReplaySize(t *testing.T) {
	r := newRing(ReplaySize)
	line := []byte(strings.Repeat("x", 99) + "\n")
	for range 3 * ReplaySize / len(line) {
		r.Write(line)
	}
	r.Write([]byte("last"))
	got := r.Bytes()
	if len(got) > ReplaySize || !bytes.HasSuffix(got, []byte("\nlast")) || !bytes.HasPrefix(got, line) {
		t.Fatalf("kept %d bytes, starting %q and ending %q", len(got), got[:min(len(got), 20)], got[max(0, len(got)-20):])
	}
}

// TestRegistryLookup: a session is found by its id only for its own user
// on its own sandbox; any other pairing is unknown.
func TestRegistryLookup(t *testing.T) {
	r := newRegistry()
	a := &term{id: "a", userID: 1, sandboxID: 10}
	b := &term{id: "b", userID: 2, sandboxID: 20}
	r.add(a)
	r.add(b)
	tests := []struct {
		name      string
		id        string
		user, box int64
		want      *term
	}{
		{"own session", "a", 1, 10, a},
		{"another user's", "b", 1, 20, nil},
		{"own id, another user", "a", 2, 10, nil},
		{"own id, another sandbox", "a", 1, 11, nil},
		{"unknown id", "zz", 1, 10, nil},
		{"empty id", "", 1, 10, nil},
	}
	for _, tt := range tests {
		if got := r.lookup(tt.id, tt.user, tt.box); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := r.user(1); len(got) != 1 || got[0] != a {
		t.Errorf("user 1's sessions: %v", got)
	}
	if got := r.all(); len(got) != 2 {
		t.Errorf("all sessions: %v", got)
	}
	r.remove(a)
	if r.lookup("a", 1, 10) != nil || len(r.user(1)) != 0 || len(r.byUser) != 1 {
		t.Errorf("a removed session is still known: %v %v", r.byID, r.byUser)
	}
}

// TestSessionIDs: ids are 128 random bits, URL-safe, never the same.
func TestSessionIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newSessionID()
		if len(id) != 22 || strings.ContainsAny(id, "+/=") || seen[id] {
			t.Fatalf("id %q (seen before: %v)", id, seen[id])
		}
		seen[id] = true
	}
}
