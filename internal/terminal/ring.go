package terminal

// ReplaySize is how much of a terminal's latest output a session keeps for a
// socket that attaches to it (docs/terminal.md): enough for a few full
// screens of a full-screen program and a long scroll back.
const ReplaySize = 256 << 10

// ring keeps the last cap bytes written to it. It is not safe for concurrent
// use: the session guards it.
type ring struct {
	buf     []byte // len(buf) == cap once allocated
	start   int    // index of the oldest byte
	n       int    // bytes held
	wrapped bool   // older output was dropped
}

func newRing(size int) *ring { return &ring{buf: make([]byte, size)} }

// Write keeps p, dropping the oldest bytes beyond the ring's size.
func (r *ring) Write(p []byte) {
	size := len(r.buf)
	if size == 0 {
		return
	}
	if len(p) >= size {
		r.wrapped = r.wrapped || r.n > 0 || len(p) > size
		copy(r.buf, p[len(p)-size:])
		r.start, r.n = 0, size
		return
	}
	if over := r.n + len(p) - size; over > 0 {
		r.start = (r.start + over) % size
		r.n -= over
		r.wrapped = true
	}
	end := (r.start + r.n) % size
	c := copy(r.buf[end:], p)
	copy(r.buf, p[c:])
	r.n += len(p)
}

// Bytes returns a copy of what the ring holds, oldest first. Once older
// output was dropped, the copy starts after the first line break within its
// first 4 KiB, so a replay does not begin inside a character or an escape
// sequence cut in half.
func (r *ring) Bytes() []byte {
	out := make([]byte, r.n)
	c := copy(out, r.buf[r.start:min(r.start+r.n, len(r.buf))])
	copy(out[c:], r.buf[:r.n-c])
	if r.wrapped {
		for i := 0; i < len(out) && i < 4<<10; i++ {
			if out[i] == '\n' {
				return out[i+1:]
			}
		}
	}
	return out
}
