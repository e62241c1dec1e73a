package profile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"tuxlab/internal/errs"
)

// Limits of avatar uploads and the size of stored avatars.
const (
	MaxAvatarBytes = 2 << 20 // an upload's file, in bytes
	MaxAvatarSide  = 4096    // an upload's width and height, in pixels
	// MaxAvatarPixels bounds width times height, what a decode's memory and
	// time grow with, whatever the sides.
	MaxAvatarPixels = MaxAvatarSide * MaxAvatarSide
	// MaxJPEGScans bounds the scans of a JPEG. Go's decoder walks every
	// block of the image once per scan, and a scan can cost a few bytes, so
	// a small file of thousands of scans took minutes of CPU. A baseline
	// JPEG has one scan; libjpeg's progressive scripts have 6 (grey), 10
	// (YCbCr), 14 (RGB) or 18 (CMYK).
	MaxJPEGScans = 32
	AvatarSide   = 512 // stored avatars are square, at most this wide
)

var locFile = []any{"file"}

// Errors of an upload, all about the multipart field "file".
var (
	ErrAvatarTooLarge = errs.Errorf(errs.TooLarge, "The avatar file is too large: at most %d bytes (2 MiB)", MaxAvatarBytes)
	ErrAvatarEmpty    = errs.Field(locFile, "The file is empty", "value_error")
	ErrNotAnImage     = errs.Field(locFile, "The file is not a PNG, JPEG, GIF or WebP image (recognised by its content, not its name or type)", "value_error")
	ErrDamagedImage   = errs.Field(locFile, "The image is damaged or incomplete and could not be read", "value_error")
)

// imageFormat is a format recognised by its magic bytes.
type imageFormat struct {
	name   string
	match  func([]byte) bool
	config func([]byte) (image.Config, error)
	decode func([]byte) (image.Image, error)
}

var formats = []imageFormat{
	{"png", prefix("\x89PNG\r\n\x1a\n"), reader(png.DecodeConfig), reader(png.Decode)},
	{"jpeg", prefix("\xff\xd8\xff"), reader(jpeg.DecodeConfig), reader(jpeg.Decode)},
	{"gif", prefix("GIF87a", "GIF89a"), reader(gif.DecodeConfig), reader(gif.Decode)}, // gif.Decode stops after the first frame
	{"webp", isWebP, reader(webp.DecodeConfig), reader(webp.Decode)},
}

func prefix(magic ...string) func([]byte) bool {
	return func(b []byte) bool {
		for _, m := range magic {
			if bytes.HasPrefix(b, []byte(m)) {
				return true
			}
		}
		return false
	}
}

// isWebP matches a RIFF container of the WEBP form.
func isWebP(b []byte) bool {
	return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP"
}

func reader[T any](f func(io.Reader) (T, error)) func([]byte) (T, error) {
	return func(b []byte) (T, error) { return f(bytes.NewReader(b)) }
}

// sniff recognises an image format by its first bytes, whatever the file is called.
func sniff(b []byte) (imageFormat, bool) {
	for _, f := range formats {
		if f.match(b) {
			return f, true
		}
	}
	return imageFormat{}, false
}

// Check refuses, cheaply, an upload that Normalize would refuse or that
// would cost too much to decode, before any pixel is decoded: its size, its
// format (by content), its dimensions from the header (MaxAvatarSide,
// MaxAvatarPixels) and, for a JPEG, the number of its scans (MaxJPEGScans),
// counted by walking its marker segments. It reads the file once and
// allocates nothing that grows with the image. A decoder cannot be stopped
// part way, so this is what keeps every decode that starts short.
func Check(data []byte) error {
	_, _, err := check(data)
	return err
}

// check is Check, returning the format and header it read.
func check(data []byte) (imageFormat, image.Config, error) {
	switch {
	case len(data) == 0:
		return imageFormat{}, image.Config{}, ErrAvatarEmpty
	case len(data) > MaxAvatarBytes:
		return imageFormat{}, image.Config{}, ErrAvatarTooLarge
	}
	f, ok := sniff(data)
	if !ok {
		return f, image.Config{}, ErrNotAnImage
	}
	cfg, err := f.config(data)
	if err != nil {
		return f, cfg, ErrDamagedImage
	}
	if w, h := cfg.Width, cfg.Height; w < 1 || h < 1 || w > MaxAvatarSide || h > MaxAvatarSide || w*h > MaxAvatarPixels {
		return f, cfg, errs.Field(locFile, fmt.Sprintf("The image is %dx%d pixels: at most %dx%d",
			cfg.Width, cfg.Height, MaxAvatarSide, MaxAvatarSide), "value_error")
	}
	if f.name == "jpeg" {
		if n := jpegScans(data); n > MaxJPEGScans {
			return f, cfg, errs.Field(locFile, fmt.Sprintf("The JPEG has %d scans: at most %d (a progressive JPEG has about 10); save it again, as a baseline JPEG or a PNG",
				n, MaxJPEGScans), "value_error")
		}
	}
	return f, cfg, nil
}

// Normalize turns an uploaded image into a stored avatar: a PNG, square (the
// centre of the image), at most AvatarSide pixels wide. The format is
// recognised by content: PNG, JPEG, GIF (its first frame) or WebP. The file
// passes Check first, so a small file declaring a huge image, or a JPEG of
// thousands of scans, is refused without decoding it.
// The output is encoded afresh from the pixels: no metadata, extra chunk or
// trailing data of the upload survives. A JPEG's EXIF orientation is applied
// first, since the EXIF data itself does not survive.
func Normalize(data []byte) ([]byte, error) {
	f, cfg, err := check(data)
	if err != nil {
		return nil, err
	}
	img, err := f.decode(data)
	if err != nil {
		return nil, ErrDamagedImage
	}
	b := img.Bounds()
	if b.Dx() < 1 || b.Dy() < 1 || b.Dx() > MaxAvatarSide || b.Dy() > MaxAvatarSide {
		return nil, ErrDamagedImage // the decoders keep to the header; this is a second fence
	}
	if f.name == "gif" && b != image.Rect(0, 0, cfg.Width, cfg.Height) {
		// A GIF frame may cover part of the logical screen: place it on the screen.
		screen := image.NewRGBA(image.Rect(0, 0, cfg.Width, cfg.Height))
		draw.Draw(screen, b, img, b.Min, draw.Src)
		img, b = screen, screen.Bounds()
	}
	side := min(b.Dx(), b.Dy())
	crop := image.Rectangle{Min: b.Min.Add(image.Pt((b.Dx()-side)/2, (b.Dy()-side)/2))}
	crop.Max = crop.Min.Add(image.Pt(side, side))
	out := image.NewRGBA(image.Rect(0, 0, min(side, AvatarSide), min(side, AvatarSide)))
	if side <= AvatarSide {
		draw.Draw(out, out.Bounds(), img, crop.Min, draw.Src)
	} else {
		draw.CatmullRom.Scale(out, out.Bounds(), img, crop, draw.Src, nil)
	}
	if f.name == "jpeg" {
		out = orient(out, jpegOrientation(data))
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// jpegOrientation returns the EXIF orientation (1 to 8) of a JPEG, 1 when it
// has none or it cannot be read. Only the segments before the image data are
// read, each within its declared length.
func jpegOrientation(b []byte) int {
	for i := 2; i+4 <= len(b); {
		if b[i] != 0xff {
			return 1
		}
		marker := b[i+1]
		switch {
		case marker == 0xff: // fill byte
			i++
			continue
		case marker == 0x01 || marker >= 0xd0 && marker <= 0xd8: // no length
			i += 2
			continue
		case marker == 0xda || marker == 0xd9: // start of scan, end of image
			return 1
		}
		n := int(binary.BigEndian.Uint16(b[i+2:]))
		if n < 2 || i+2+n > len(b) {
			return 1
		}
		seg := b[i+4 : i+2+n]
		if marker == 0xe1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			if o := tiffOrientation(seg[6:]); o != 0 {
				return o
			}
		}
		i += 2 + n
	}
	return 1
}

// jpegScans counts the start-of-scan (SOS) markers of a JPEG up to its end
// (EOI), as image/jpeg would meet them: segments with a length are skipped
// by it, and the entropy-coded data after a scan's header up to the next
// marker (0xFF followed by anything but 0x00, a fill 0xFF or a restart
// marker). Bytes the decoder would skip as extraneous are skipped the same
// way, so a scan the decoder would run is never left uncounted.
func jpegScans(b []byte) int {
	scans := 0
	for i := 2; i < len(b); { // after SOI
		i = nextMarker(b, i)
		if i+1 >= len(b) {
			return scans
		}
		marker := b[i+1]
		i += 2
		switch {
		case marker == 0xd9: // EOI
			return scans
		case marker >= 0xd0 && marker <= 0xd8, marker == 0x01: // RSTn, SOI, TEM: no length
			continue
		}
		if i+2 > len(b) {
			return scans
		}
		i += int(binary.BigEndian.Uint16(b[i:])) // the length counts itself
		if marker == 0xda {
			scans++ // its data runs to the next marker, which nextMarker finds
		}
	}
	return scans
}

// nextMarker returns the index of the 0xFF that starts the next marker at
// or after i (len(b) when there is none): 0xFF followed by a byte other than
// 0x00 (a stuffed data byte), 0xFF (fill) or a restart marker, which the
// entropy-coded data of a scan may hold.
func nextMarker(b []byte, i int) int {
	for ; i+1 < len(b); i++ {
		if b[i] != 0xff {
			continue
		}
		if m := b[i+1]; m != 0x00 && m != 0xff && (m < 0xd0 || m > 0xd7) {
			return i
		}
	}
	return len(b)
}

// tiffOrientation reads tag 0x0112 (Orientation) of the first IFD of a TIFF
// structure, or returns 0.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 0
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 0
	}
	if bo.Uint16(t[2:]) != 42 {
		return 0
	}
	off := uint64(bo.Uint32(t[4:]))
	if off+2 > uint64(len(t)) {
		return 0
	}
	n := int(bo.Uint16(t[off:]))
	for k, p := 0, int(off)+2; k < n && p+12 <= len(t); k, p = k+1, p+12 {
		if bo.Uint16(t[p:]) == 0x0112 && bo.Uint16(t[p+2:]) == 3 { // SHORT
			if v := int(bo.Uint16(t[p+8:])); v >= 1 && v <= 8 {
				return v
			}
			return 0
		}
	}
	return 0
}

// orient returns the square m as EXIF orientation o says it is displayed.
func orient(m *image.RGBA, o int) *image.RGBA {
	if o <= 1 || o > 8 {
		return m
	}
	n := m.Bounds().Dx()
	last := n - 1
	src := func(x, y int) (int, int) {
		switch o {
		case 2: // mirrored
			return last - x, y
		case 3: // upside down
			return last - x, last - y
		case 4: // mirrored upside down
			return x, last - y
		case 5: // mirrored, rotated
			return y, x
		case 6: // to be turned a quarter clockwise
			return y, last - x
		case 7:
			return last - y, last - x
		default: // 8: to be turned a quarter anticlockwise
			return last - y, x
		}
	}
	out := image.NewRGBA(m.Bounds())
	for y := range n {
		for x := range n {
			sx, sy := src(x, y)
			copy(out.Pix[out.PixOffset(x, y):][:4], m.Pix[m.PixOffset(sx, sy):][:4])
		}
	}
	return out
}
