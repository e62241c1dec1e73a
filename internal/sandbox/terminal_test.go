package sandbox

import (
	"bytes"
	"testing"
)

// TestReadyScanner: the wrapper's marker is taken out of a terminal's output
// wherever reads split it, and everything else passes in order.
func TestReadyScanner(t *testing.T) {
	stream := append(append([]byte("echo early\r\n\x1b]0;title\x07"), readyMarker...), "$ prompt \x1b]x"...)
	want := "echo early\r\n\x1b]0;title\x07$ prompt \x1b]x"
	for size := 1; size <= len(stream); size++ {
		var s readyScanner
		var got []byte
		found := 0
		for i := 0; i < len(stream); i += size {
			out, f := s.feed(stream[i:min(i+size, len(stream))])
			got = append(got, out...)
			if f {
				found++
			}
		}
		got = append(got, s.flush()...)
		if string(got) != want || found != 1 {
			t.Fatalf("reads of %d bytes: %q, found %d times", size, got, found)
		}
	}
	// Without a marker, everything still comes out, the end at the flush.
	var s readyScanner
	out, _ := s.feed([]byte("ab\x1b]tux"))
	if rest := s.flush(); !bytes.Equal(append(out, rest...), []byte("ab\x1b]tux")) {
		t.Fatalf("%q then %q", out, rest)
	}
}
