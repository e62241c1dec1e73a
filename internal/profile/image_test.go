package profile

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"tuxlab/internal/errs"
)

var (
	red  = color.RGBA{255, 0, 0, 255}
	blue = color.RGBA{0, 0, 255, 255}
)

// halves is a w×h image, its left half red and its right half blue.
func halves(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := red
			if x >= w/2 {
				c = blue
			}
			m.SetRGBA(x, y, c)
		}
	}
	return m
}

func encodePNG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withExif splices an APP1 Exif segment carrying orientation (and extra
// bytes after the TIFF structure) right after a JPEG's SOI marker.
func withExif(jpg []byte, orientation uint16, extra string) []byte {
	tiff := []byte("MM\x00\x2a\x00\x00\x00\x08")
	tiff = binary.BigEndian.AppendUint16(tiff, 1)                                     // one entry
	tiff = append(tiff, 0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01)               // Orientation, SHORT, count 1
	tiff = append(binary.BigEndian.AppendUint16(tiff, orientation), 0, 0, 0, 0, 0, 0) // value, padding, no next IFD
	seg := append([]byte("Exif\x00\x00"), append(tiff, extra...)...)
	app1 := binary.BigEndian.AppendUint16([]byte{0xff, 0xe1}, uint16(len(seg)+2))
	return append(append(append([]byte{}, jpg[:2]...), append(app1, seg...)...), jpg[2:]...)
}

// pngBomb is a valid PNG of a few hundred bytes declaring a w×h grey image.
func pngBomb(w, h uint32) []byte {
	chunk := func(typ string, data []byte) []byte {
		c := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		c = append(append(c, typ...), data...)
		return binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, w), h)
	ihdr = append(ihdr, 8, 0, 0, 0, 0) // 8-bit greyscale
	// A zlib stream of a few hundred zero bytes: rows that inflate to nothing much.
	idat := []byte{0x78, 0x9c, 0x63, 0x60, 0x18, 0x05, 0xa3, 0x60, 0x14, 0x0c, 0x77, 0x00, 0x00, 0xb4, 0x00, 0x01}
	out := []byte("\x89PNG\r\n\x1a\n")
	out = append(out, chunk("IHDR", ihdr)...)
	out = append(out, chunk("IDAT", idat)...)
	return append(out, chunk("IEND", nil)...)
}

// webpSolid is a lossless WebP of w×h pixels of one colour: five one-symbol
// prefix codes, so the pixels take no bits at all.
func webpSolid(w, h int, c color.NRGBA) []byte {
	var (
		out   []byte
		acc   uint64
		nbits uint
	)
	put := func(v uint64, n uint) {
		acc |= v << nbits
		for nbits += n; nbits >= 8; nbits -= 8 {
			out = append(out, byte(acc))
			acc >>= 8
		}
	}
	out = append(out, 0x2f)
	put(uint64(w-1), 14)
	put(uint64(h-1), 14)
	put(0, 1)                                            // alpha unused
	put(0, 3)                                            // version
	put(0, 1)                                            // no transform
	put(0, 1)                                            // no colour cache
	put(0, 1)                                            // no meta prefix codes
	for _, sym := range []uint8{c.G, c.R, c.B, c.A, 0} { // green, red, blue, alpha, distance
		put(1, 1) // simple code
		put(0, 1) // one symbol
		put(1, 1) // of 8 bits
		put(uint64(sym), 8)
	}
	if nbits > 0 {
		out = append(out, byte(acc))
	}
	if len(out)%2 == 1 {
		out = append(out, 0)
	}
	riff := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(4+8+len(out)))...)
	riff = append(append(riff, "WEBPVP8L"...), binary.LittleEndian.AppendUint32(nil, uint32(len(out)))...)
	return append(riff, out...)
}

// decoded decodes a normalised avatar, which must be a square PNG of side want.
func decoded(t *testing.T, b []byte, want int) image.Image {
	t.Helper()
	if !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("output is not a PNG: % x", b[:min(8, len(b))])
	}
	m, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Bounds(); r.Dx() != want || r.Dy() != want {
		t.Fatalf("output %v, want %dx%d", r, want, want)
	}
	return m
}

// near reports whether c is within a JPEG's error of want.
func near(c color.Color, want color.RGBA) bool {
	r, g, b, _ := c.RGBA()
	d := func(x uint32, y uint8) bool { return int(x>>8)-int(y) < 40 && int(y)-int(x>>8) < 40 }
	return d(r, want.R) && d(g, want.G) && d(b, want.B)
}

func TestNormalizeFormats(t *testing.T) {
	frames := &gif.GIF{
		Image: []*image.Paletted{
			image.NewPaletted(image.Rect(0, 0, 30, 20), color.Palette{red, blue}),
			image.NewPaletted(image.Rect(0, 0, 30, 20), color.Palette{blue, red}),
		},
		Delay: []int{10, 10},
	}
	var g bytes.Buffer
	if err := gif.EncodeAll(&g, frames); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		in     []byte
		side   int
		centre color.RGBA
	}{
		{"large png is scaled down", encodePNG(t, halves(1200, 800)), AvatarSide, red},
		{"small png keeps its size", encodePNG(t, halves(60, 40)), 40, red},
		{"tall png", encodePNG(t, halves(40, 90)), 40, red},
		{"jpeg", encodeJPEG(t, halves(64, 48)), 48, red},
		{"gif: first frame only", g.Bytes(), 20, red},
		{"webp", webpSolid(20, 12, color.NRGBA{0, 0, 255, 255}), 12, blue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Normalize(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			m := decoded(t, out, tt.side)
			// Left of the centre: the left half of a two-colour image, or the one colour.
			if c := m.At(tt.side/2-4, tt.side/2); !near(c, tt.centre) {
				t.Fatalf("left of centre is %v, want %v", c, tt.centre)
			}
		})
	}
}

func TestNormalizeAppliesExifOrientation(t *testing.T) {
	src := encodeJPEG(t, halves(64, 64)) // red left, blue right
	// Where the corners go: top left, top right, bottom left.
	for _, tt := range []struct {
		orientation uint16
		corners     [3]color.RGBA
	}{
		{1, [3]color.RGBA{red, blue, red}},  // as stored
		{6, [3]color.RGBA{red, red, blue}},  // a quarter clockwise: the left half goes to the top
		{8, [3]color.RGBA{blue, blue, red}}, // a quarter anticlockwise: the right half goes to the top
		{3, [3]color.RGBA{blue, red, blue}}, // upside down
	} {
		out, err := Normalize(withExif(src, tt.orientation, ""))
		if err != nil {
			t.Fatal(err)
		}
		m := decoded(t, out, 64)
		for i, p := range []image.Point{{2, 2}, {61, 2}, {2, 61}} {
			if c := m.At(p.X, p.Y); !near(c, tt.corners[i]) {
				t.Errorf("orientation %d: %v is %v, want %v", tt.orientation, p, c, tt.corners[i])
			}
		}
	}
}

func TestNormalizeStripsMetadata(t *testing.T) {
	const marker = "GPS-SECRET-MARKER-48.8584N-2.2945E"
	in := withExif(encodeJPEG(t, halves(32, 32)), 1, marker)
	if jpegOrientation(in) != 1 || !bytes.Contains(in, []byte(marker)) {
		t.Fatal("fixture is wrong")
	}
	// A PNG polyglot: a text chunk and data after IEND.
	p := encodePNG(t, halves(32, 32))
	p = append(p, []byte("<script>alert(1)</script>"+marker)...)
	for _, b := range [][]byte{in, p} {
		out, err := Normalize(b)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte(marker)) || bytes.Contains(out, []byte("<script")) {
			t.Fatal("metadata survived")
		}
		decoded(t, out, 32)
	}
}

func TestNormalizeRefuses(t *testing.T) {
	big := image.NewGray(image.Rect(0, 0, MaxAvatarSide+1, 1))
	tests := []struct {
		name string
		in   []byte
		kind errs.Kind
		msg  string
	}{
		{"empty", nil, errs.Invalid, "empty"},
		{"text named .png", []byte("just some text, honestly a PNG"), errs.Invalid, "not a PNG"},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), errs.Invalid, "not a PNG"},
		{"truncated png", encodePNG(t, halves(40, 40))[:60], errs.Invalid, "damaged"},
		{"too wide", encodePNG(t, big), errs.Invalid, "4097x1 pixels"},
		{"bomb", pngBomb(100000, 100000), errs.Invalid, "100000x100000 pixels"},
		{"over 2 MiB", append(encodePNG(t, halves(4, 4)), make([]byte, MaxAvatarBytes)...), errs.TooLarge, "2 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Normalize(tt.in)
			if !errs.Is(err, tt.kind) || !strings.Contains(errorText(err), tt.msg) {
				t.Fatalf("got %v, want kind %d with %q", err, tt.kind, tt.msg)
			}
		})
	}
}

func errorText(err error) string {
	var e *errs.Error
	if errors.As(err, &e) && len(e.Fields) > 0 {
		return e.Fields[0].Msg
	}
	return err.Error()
}

// TestNormalizeBombAllocatesNothingLarge: the dimensions are refused from the
// header, before any pixel buffer exists.
func TestNormalizeBombAllocatesNothingLarge(t *testing.T) {
	bombs := [][]byte{pngBomb(100000, 100000), pngBomb(4096, 100000), webpSolid(16384, 16384, color.NRGBA{A: 255})}
	for _, b := range bombs {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Normalize(b)
		runtime.ReadMemStats(&after)
		if !errs.Is(err, errs.Invalid) {
			t.Fatalf("bomb accepted: %v", err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Fatalf("refusing a bomb allocated %d bytes", n)
		}
	}
}

func TestJPEGOrientationOfGarbage(t *testing.T) {
	jpg := encodeJPEG(t, halves(8, 8))
	for _, b := range [][]byte{
		nil, {0xff, 0xd8}, {0xff, 0xd8, 0xff, 0xe1, 0xff, 0xff}, jpg[:20],
		withExif(jpg, 9, ""), withExif(jpg, 0, ""),
		append([]byte{0xff, 0xd8, 0xff, 0xe1, 0x00, 0x10}, "Exif\x00\x00II\x2a\x00\xff\xff\xff\xff"...),
	} {
		if o := jpegOrientation(b); o != 1 {
			t.Errorf("orientation of % x = %d, want 1", b[:min(len(b), 16)], o)
		}
	}
}

func TestValidAvatarName(t *testing.T) {
	for name, want := range map[string]bool{
		"0123456789abcdef0123456789abcdef.png":  true,
		"0123456789ABCDEF0123456789abcdef.png":  false,
		"0123456789abcdef0123456789abcde.png":   false,
		"0123456789abcdef0123456789abcdef.jpg":  false,
		"0123456789abcdef0123456789abcdef.png/": false,
		"../0123456789abcdef0123456789abc.png":  false,
		".0123456789abcdef0123456789abcdef.png": false,
		"":                                      false, ".": false, "..": false,
	} {
		if got := ValidAvatarName(name); got != want {
			t.Errorf("ValidAvatarName(%q) = %v", name, got)
		}
	}
}

func TestDirStorage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := NewDirStorage(dir)
	name, _ := newAvatarName()
	if _, err := d.Open(ctx, name); !errs.Is(err, errs.NotFound) {
		t.Fatalf("open before the directory exists: %v", err)
	}
	if err := d.Delete(ctx, name); err != nil {
		t.Fatalf("delete before the directory exists: %v", err)
	}
	if err := d.Put(ctx, name, []byte("png bytes")); err != nil {
		t.Fatal(err)
	}
	f, err := d.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "png bytes" {
		t.Fatalf("read %q", b)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "avatars"))
	if len(entries) != 1 {
		t.Fatalf("directory holds %v, want the file alone", entries)
	}
	for _, bad := range []string{"../secret_key", "..", ".", "x.png", "/etc/passwd"} {
		if _, err := d.Open(ctx, bad); !errs.Is(err, errs.NotFound) {
			t.Errorf("open %q: %v", bad, err)
		}
		if err := d.Put(ctx, bad, nil); err == nil {
			t.Errorf("put %q accepted", bad)
		}
		if err := d.Delete(ctx, bad); err == nil {
			t.Errorf("delete %q accepted", bad)
		}
	}
	if err := d.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "avatars", name)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("file still there: %v", err)
	}
	if err := d.Delete(ctx, name); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}

// scansJPEG is a valid progressive greyscale JPEG of w×h pixels made of
// scans scans, each a few bytes: one run of end-of-band codes over every
// block, as cheap to write as it is costly to decode (image/jpeg walks every
// block of the image once per scan).
func scansJPEG(w, h, scans int) []byte {
	segment := func(marker byte, data ...byte) []byte {
		return append(binary.BigEndian.AppendUint16([]byte{0xff, marker}, uint16(len(data)+2)), data...)
	}
	out := []byte{0xff, 0xd8}
	out = append(out, segment(0xdb, append([]byte{0}, bytes.Repeat([]byte{1}, 64)...)...)...)          // DQT: all ones
	out = append(out, segment(0xc2, 8, byte(h>>8), byte(h), byte(w>>8), byte(w), 1, 1, 0x11, 0)...)    // SOF2: one component
	out = append(out, segment(0xc4, append(append([]byte{0x10, 1}, make([]byte, 15)...), 0xe0)...)...) // DHT: AC table 0, one code "0" for EOBRUN 2^14
	blocks := ((w + 7) / 8) * ((h + 7) / 8)
	bits := (blocks + 1<<14 - 1) >> 14 * 15 // per run: the code bit and 14 zero bits
	data := make([]byte, (bits+7)/8)
	if pad := len(data)*8 - bits; pad > 0 {
		data[len(data)-1] = 1<<pad - 1 // padded with ones
	}
	for range scans {
		out = append(out, segment(0xda, 1, 1, 0x00, 1, 63, 0)...) // SOS: AC coefficients 1 to 63
		out = append(out, data...)
	}
	return append(out, 0xff, 0xd9)
}

func TestCheckCountsJPEGScans(t *testing.T) {
	// The fixture is a JPEG image/jpeg decodes, and its scans are counted.
	for _, scans := range []int{1, MaxJPEGScans, MaxJPEGScans + 1, 500} {
		b := scansJPEG(64, 48, scans)
		if n := jpegScans(b); n != scans {
			t.Fatalf("%d scans counted as %d", scans, n)
		}
		if m, err := jpeg.Decode(bytes.NewReader(b)); err != nil || m.Bounds().Dx() != 64 {
			t.Fatalf("%d scans: image/jpeg says %v", scans, err)
		}
	}
	if n := jpegScans(encodeJPEG(t, halves(64, 48))); n != 1 {
		t.Fatalf("a baseline JPEG has %d scans", n)
	}
	// Up to the limit: accepted and decoded; past it: refused, by Check too.
	if _, err := Normalize(scansJPEG(64, 48, MaxJPEGScans)); err != nil {
		t.Fatalf("%d scans: %v", MaxJPEGScans, err)
	}
	for _, b := range [][]byte{scansJPEG(64, 48, MaxJPEGScans+1), scansJPEG(4096, 4096, 20000)} {
		for _, f := range []func([]byte) error{Check, func(b []byte) error { _, err := Normalize(b); return err }} {
			err := f(b)
			if !errs.Is(err, errs.Invalid) || !strings.Contains(errorText(err), "scans: at most 32") {
				t.Fatalf("%d bytes of scans: %v", len(b), err)
			}
		}
	}

	// Markers in a segment's data are not scans; fill bytes, stuffed bytes and
	// restart markers in a scan's data are skipped; the end of the image ends it.
	app := append([]byte{0xff, 0xe1, 0x00, 0x08}, 0xff, 0xda, 0xff, 0xda, 0xff, 0xda)
	sos := []byte{0xff, 0xda, 0x00, 0x08, 1, 1, 0, 1, 63, 0}
	for _, tt := range []struct {
		name string
		b    []byte
		want int
	}{
		{"in an APP segment", append(append([]byte{0xff, 0xd8}, app...), sos...), 1},
		{"fill bytes", append([]byte{0xff, 0xd8, 0xff, 0xff, 0xff}, append(sos[1:], 0x12, 0xff, 0xff, 0xda, 0, 8, 1, 1, 0, 1, 63, 0)...), 2},
		{"stuffed and restart", append(append([]byte{0xff, 0xd8}, sos...), 0xff, 0x00, 0xff, 0xd3, 0xff, 0xda, 0, 2), 2},
		{"extraneous bytes between segments", append(append([]byte{0xff, 0xd8, 1, 2, 3}, sos...), sos...), 2},
		{"after the end", append(append(append([]byte{0xff, 0xd8}, sos...), 0xff, 0xd9), sos...), 1},
		{"cut short", append([]byte{0xff, 0xd8}, sos[:5]...), 1},
		{"nothing", []byte{0xff, 0xd8}, 0},
	} {
		if n := jpegScans(tt.b); n != tt.want {
			t.Errorf("%s: %d scans, want %d", tt.name, n, tt.want)
		}
	}
}
