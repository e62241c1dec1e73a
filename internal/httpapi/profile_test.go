package httpapi_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io/fs"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/store/storetest"
)

type profileBody struct {
	ID        int64   `json:"id"`
	Username  string  `json:"username"`
	Email     string  `json:"email"`
	Role      string  `json:"role"`
	FullName  string  `json:"full_name"`
	Bio       string  `json:"bio"`
	AvatarURL *string `json:"avatar_url"`
	CreatedAt string  `json:"created_at"`
	UpdatedAt string  `json:"updated_at"`
}

func getProfile(t *testing.T, e *apitest.Env, token string) profileBody {
	t.Helper()
	var p profileBody
	e.Get("/api/profile/me", token).Expect(t, 200).JSON(t, &p)
	return p
}

func putProfile(e *apitest.Env, token string, body any) *apitest.Response {
	return e.Do(apitest.Request{Method: "PUT", Path: "/api/profile/me", Token: token, Body: body})
}

// activityKinds lists the kinds of a user's activity rows, in order.
func activityKinds(t *testing.T, e *apitest.Env, userID int64) []string {
	t.Helper()
	rows, err := e.DB.SQL().QueryContext(context.Background(), `SELECT kind FROM activity WHERE user_id = $1 ORDER BY id`, userID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	kinds := []string{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return kinds
}

func expectKinds(t *testing.T, e *apitest.Env, userID int64, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := activityKinds(t, e, userID); !slices.Equal(got, want) {
		t.Fatalf("activity of user %d: %v, want %v", userID, got, want)
	}
}

func TestProfileReadAndUpdate(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		alice := e.CreateUser("alice", auth.RoleStudent)
		bob := e.CreateUser("bob", auth.RoleStudent)

		p := getProfile(t, e, alice.Token)
		if p.ID != alice.ID || p.Username != "alice" || p.Email != "alice@tuxlab.org" || p.Role != "student" ||
			p.FullName != "" || p.Bio != "" || p.AvatarURL != nil {
			t.Fatalf("fresh profile %+v", p)
		}
		e.Get("/api/profile/me", "").Expect(t, 401)
		putProfile(e, "", map[string]any{"bio": "x"}).Expect(t, 401)

		// Only the fields given change; surrounding spaces go.
		var got profileBody
		putProfile(e, alice.Token, map[string]any{"full_name": "  Alice Liddell ", "bio": "Sysadmin in training.\nLikes awk.\tAnd tabs."}).Expect(t, 200).JSON(t, &got)
		if got.FullName != "Alice Liddell" || got.Bio != "Sysadmin in training.\nLikes awk.\tAnd tabs." || got.Email != "alice@tuxlab.org" {
			t.Fatalf("after update %+v", got)
		}
		putProfile(e, alice.Token, map[string]any{"bio": "Still learning."}).Expect(t, 200).JSON(t, &got)
		if got.FullName != "Alice Liddell" || got.Bio != "Still learning." {
			t.Fatalf("partial update %+v", got)
		}
		// Nothing changes: 200, and nothing is recorded.
		putProfile(e, alice.Token, map[string]any{}).Expect(t, 200)
		putProfile(e, alice.Token, map[string]any{"full_name": "Alice Liddell", "bio": nil}).Expect(t, 200)

		// Every invalid field is reported, at its place in the body.
		for _, tt := range []struct {
			body any
			locs []string
		}{
			{map[string]any{"full_name": strings.Repeat("é", 101)}, []string{"body.full_name"}},
			{map[string]any{"full_name": "Alice\nLiddell"}, []string{"body.full_name"}},
			{map[string]any{"full_name": "Alice\u2028Liddell"}, []string{"body.full_name"}},
			{map[string]any{"bio": strings.Repeat("b", 1001)}, []string{"body.bio"}},
			{map[string]any{"bio": "nul \x00 byte"}, []string{"body.bio"}},
			{map[string]any{"bio": "bell \a"}, []string{"body.bio"}},
			{map[string]any{"email": "alice@tuxlab.test"}, []string{"body.email"}},
			{map[string]any{"email": ""}, []string{"body.email"}},
			{map[string]any{"email": "Alice <alice@tuxlab.org>"}, []string{"body.email"}},
			{map[string]any{"bio": 5}, []string{"body.bio"}},
			{map[string]any{"full_name": "x\ny", "bio": strings.Repeat("b", 1001), "email": "nope"}, []string{"body.full_name", "body.bio", "body.email"}},
			{"not json", []string{"body"}},
			{[]string{"an", "array"}, []string{"body"}},
		} {
			r := putProfile(e, alice.Token, tt.body).Expect(t, 422)
			if l := locs(t, r); !slices.Equal(l, tt.locs) {
				t.Fatalf("%v: 422 at %v, want %v", tt.body, l, tt.locs)
			}
		}
		// An empty JSON body is a clean 422; a body that is not JSON, 415.
		e.Do(apitest.Request{Method: "PUT", Path: "/api/profile/me", Token: alice.Token, Body: ""}).Expect(t, 422)
		e.Do(apitest.Request{Method: "PUT", Path: "/api/profile/me", Token: alice.Token, Body: "", Header: http.Header{"Content-Type": {"text/plain"}}}).Expect(t, 415)

		// E-mail: normalised like registration, unique across accounts.
		for _, taken := range []string{"bob@tuxlab.org", "BOB@TuxLab.org"} {
			r := putProfile(e, alice.Token, map[string]any{"email": taken}).Expect(t, 409)
			if r.Detail() != "Email already registered" {
				t.Fatalf("409 detail %q", r.Detail())
			}
		}
		putProfile(e, alice.Token, map[string]any{"email": " Alice.L@TuxLab.org "}).Expect(t, 200).JSON(t, &got)
		if got.Email != "alice.l@tuxlab.org" {
			t.Fatalf("email %q", got.Email)
		}
		// The new e-mail is taken for others; the old one is free again.
		putProfile(e, bob.Token, map[string]any{"email": "alice.l@tuxlab.org"}).Expect(t, 409)
		putProfile(e, bob.Token, map[string]any{"email": "alice@tuxlab.org"}).Expect(t, 200)

		// Each user sees only their own profile.
		if p := getProfile(t, e, bob.Token); p.ID != bob.ID || p.Username != "bob" || p.FullName != "" || p.Email != "alice@tuxlab.org" {
			t.Fatalf("bob sees %+v", p)
		}
		if p := getProfile(t, e, alice.Token); p.FullName != "Alice Liddell" || p.Email != "alice.l@tuxlab.org" || p.UpdatedAt < p.CreatedAt {
			t.Fatalf("alice sees %+v", p)
		}
		// auth/me agrees on the e-mail.
		var me userBody
		e.Get("/api/auth/me", alice.Token).Expect(t, 200).JSON(t, &me)
		if me.Email != "alice.l@tuxlab.org" {
			t.Fatalf("auth/me %+v", me)
		}

		expectKinds(t, e, alice.ID, "profile_updated", "profile_updated", "profile_updated")
		expectKinds(t, e, bob.ID, "profile_updated")
	})
}

func TestProfilePasswordChange(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		alice := e.CreateUser("alice", auth.RoleStudent)
		change := func(token string, body any) *apitest.Response {
			return e.Do(apitest.Request{Method: "PUT", Path: "/api/profile/password", Token: token, Body: body})
		}
		const next = "a brand new passphrase"
		for _, tt := range []struct {
			body any
			locs []string
		}{
			{map[string]any{"current_password": "wrong password", "new_password": next}, []string{"body.current_password"}},
			{map[string]any{}, []string{"body.current_password", "body.new_password"}},
			{map[string]any{"current_password": apitest.Password}, []string{"body.new_password"}},
			{map[string]any{"current_password": "", "new_password": next}, []string{"body.current_password"}},
			{map[string]any{"current_password": apitest.Password, "new_password": "short"}, []string{"body.new_password"}},
			{map[string]any{"current_password": apitest.Password, "new_password": strings.Repeat("x", 73)}, []string{"body.new_password"}},
			{map[string]any{"current_password": apitest.Password, "new_password": "ALICE"}, []string{"body.new_password"}},
			{map[string]any{"current_password": apitest.Password, "new_password": apitest.Password}, []string{"body.new_password"}},
			{map[string]any{"current_password": 12345678, "new_password": next}, []string{"body.current_password"}},
		} {
			r := change(alice.Token, tt.body).Expect(t, 422)
			if l := locs(t, r); !slices.Equal(l, tt.locs) {
				t.Fatalf("%v: 422 at %v, want %v", tt.body, l, tt.locs)
			}
		}
		var wrong validationBody
		change(alice.Token, map[string]any{"current_password": "wrong password", "new_password": next}).Expect(t, 422).JSON(t, &wrong)
		if wrong.Detail[0].Msg != "Current password is incorrect" {
			t.Fatalf("wrong password detail %+v", wrong.Detail)
		}
		change("", map[string]any{"current_password": apitest.Password, "new_password": next}).Expect(t, 401)
		expectKinds(t, e, alice.ID)

		// The right password: changed; the token that asked is dead, the new one works.
		var ok struct {
			Detail      string `json:"detail"`
			AccessToken string `json:"access_token"`
			TokenType   string `json:"token_type"`
		}
		change(alice.Token, map[string]any{"current_password": apitest.Password, "new_password": next}).Expect(t, 200).JSON(t, &ok)
		if ok.AccessToken == "" || ok.TokenType != "bearer" {
			t.Fatalf("answer %+v", ok)
		}
		e.Get("/api/profile/me", alice.Token).Expect(t, 401)
		e.Get("/api/auth/me", alice.Token).Expect(t, 401)
		getProfile(t, e, ok.AccessToken)
		e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login", Body: map[string]any{"username": "alice", "password": apitest.Password}}).Expect(t, 401)
		e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login", Body: map[string]any{"username": "alice", "password": next}}).Expect(t, 200)
		expectKinds(t, e, alice.ID, "password_changed")
	})
}

// TestPasswordChangeRateLimit: password changes are limited per account like
// logins (TUXLAB_AUTH_RATE_USER a minute): the attempt after the budget is
// 429 with Retry-After, even with the right password, and once the window has
// passed the right password changes it.
func TestPasswordChangeRateLimit(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			clock := &pinnedClock{t: time.Now()}
			e := apitest.New(t, eng, func(c *config.Config) { c.LoginPerUserPerMin = 3; c.RateLimitNow = clock.Now })
			alice := e.CreateUser("alice", auth.RoleStudent)
			bob := e.CreateUser("bob", auth.RoleStudent)
			change := func(u *apitest.User, current string) *apitest.Response {
				return e.Do(apitest.Request{Method: "PUT", Path: "/api/profile/password", Token: u.Token,
					Body: map[string]any{"current_password": current, "new_password": "a brand new passphrase"}})
			}
			for range 3 {
				change(alice, "a wrong guess").Expect(t, 422)
			}
			for _, current := range []string{"a wrong guess", apitest.Password} {
				r := change(alice, current).Expect(t, 429)
				if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < 1 || n > 60 {
					t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
				}
			}
			change(bob, "a wrong guess").Expect(t, 422) // another account has its own budget
			expectKinds(t, e, alice.ID)

			clock.mu.Lock()
			clock.t = clock.t.Add(time.Minute)
			clock.mu.Unlock()
			change(alice, apitest.Password).Expect(t, 200)
			expectKinds(t, e, alice.ID, "password_changed")
		})
	}
}

// avatarUpload is a multipart body with one file field and a content type.
func avatarUpload(t *testing.T, field, filename, contentType string, data []byte) ([]byte, http.Header) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.WriteField("note", "a field before the file is skipped"); err != nil {
		t.Fatal(err)
	}
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{`form-data; name="` + field + `"; filename="` + filename + `"`}
	h["Content-Type"] = []string{contentType}
	part, err := w.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	part.Write(data)
	w.Close()
	return b.Bytes(), http.Header{"Content-Type": {w.FormDataContentType()}}
}

func uploadAvatar(e *apitest.Env, token, filename, contentType string, data []byte) *apitest.Response {
	body, h := avatarUpload(e.T.(*testing.T), "file", filename, contentType, data)
	return e.Do(apitest.Request{Method: "POST", Path: "/api/profile/avatar", Token: token, Body: body, Header: h})
}

// gradient is a w×h image with a colour in each corner region.
func gradient(w, h int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.SetNRGBA(x, y, color.NRGBA{uint8(255 * x / w), uint8(255 * y / h), 128, 255})
		}
	}
	return m
}

func pngBytes(t *testing.T, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// jpegWithExif is a JPEG with an APP1 Exif segment carrying marker spliced in
// after its SOI marker, as a camera writes GPS data.
func jpegWithExif(t *testing.T, marker string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, gradient(320, 240), nil); err != nil {
		t.Fatal(err)
	}
	seg := append([]byte("Exif\x00\x00MM\x00\x2a\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00"), marker...)
	app1 := binary.BigEndian.AppendUint16([]byte{0xff, 0xe1}, uint16(len(seg)+2))
	jpg := b.Bytes()
	out := append(append([]byte{}, jpg[:2]...), app1...)
	return append(append(out, seg...), jpg[2:]...)
}

// pngBomb is a valid PNG of a few hundred bytes whose header declares a w×h image.
func pngBomb(w, h uint32) []byte {
	chunk := func(typ string, data []byte) []byte {
		c := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		c = append(append(c, typ...), data...)
		return binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	ihdr := append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, w), h), 8, 0, 0, 0, 0)
	idat := []byte{0x78, 0x9c, 0x63, 0x60, 0x18, 0x05, 0xa3, 0x60, 0x14, 0x0c, 0x77, 0x00, 0x00, 0xb4, 0x00, 0x01}
	out := append([]byte("\x89PNG\r\n\x1a\n"), chunk("IHDR", ihdr)...)
	out = append(out, chunk("IDAT", idat)...)
	return append(out, chunk("IEND", nil)...)
}

var avatarURL = regexp.MustCompile(`^/avatars/[0-9a-f]{32}\.png$`)

// avatarFile is where an avatar URL's file lies on disk.
func avatarFile(e *apitest.Env, url string) string {
	return filepath.Join(e.Config.DataDir, "avatars", strings.TrimPrefix(url, "/avatars/"))
}

// fetchAvatar gets an avatar URL without a token and checks it is a square PNG of side.
func fetchAvatar(t *testing.T, e *apitest.Env, url string, side int) []byte {
	t.Helper()
	r := e.Get(url, "").Expect(t, 200)
	if ct := r.Header.Get("Content-Type"); ct != "image/png" {
		t.Fatalf("content type %q", ct)
	}
	if r.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(r.Header.Get("Cache-Control"), "max-age=31536000") {
		t.Fatalf("headers %v", r.Header)
	}
	m, err := png.Decode(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatalf("served avatar does not decode: %v", err)
	}
	if b := m.Bounds(); b.Dx() != side || b.Dy() != side {
		t.Fatalf("served avatar is %v, want %dx%d", b, side, side)
	}
	return r.Body
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func TestAvatarUploadServeReplaceDelete(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		alice := e.CreateUser("alice", auth.RoleStudent)
		bob := e.CreateUser("bob", auth.RoleStudent)

		// A PNG: stored as a square PNG, served publicly at an unguessable URL.
		var p profileBody
		uploadAvatar(e, alice.Token, "me.png", "image/png", pngBytes(t, gradient(300, 200))).Expect(t, 200).JSON(t, &p)
		if p.AvatarURL == nil || !avatarURL.MatchString(*p.AvatarURL) {
			t.Fatalf("avatar_url %v", p.AvatarURL)
		}
		first := *p.AvatarURL
		fetchAvatar(t, e, first, 200)
		if !exists(t, avatarFile(e, first)) {
			t.Fatal("no file on disk")
		}
		if got := getProfile(t, e, alice.Token); got.AvatarURL == nil || *got.AvatarURL != first {
			t.Fatalf("profile shows %v", got.AvatarURL)
		}

		// A JPEG with EXIF: replaced; nothing of the EXIF survives; the old file is gone.
		const marker = "GPS-SECRET-MARKER-51.5007N-0.1246W"
		uploadAvatar(e, alice.Token, "photo.jpg", "image/jpeg", jpegWithExif(t, marker)).Expect(t, 200).JSON(t, &p)
		second := *p.AvatarURL
		if second == first || !avatarURL.MatchString(second) {
			t.Fatalf("second avatar_url %q", second)
		}
		served := fetchAvatar(t, e, second, 240)
		if bytes.Contains(served, []byte(marker)) || bytes.Contains(served, []byte("Exif")) {
			t.Fatal("EXIF survived the upload")
		}
		if exists(t, avatarFile(e, first)) {
			t.Fatal("the replaced avatar's file is still on disk")
		}
		e.Get(first, "").Expect(t, 404)

		// Refused by content, whatever the name and type say; nothing changes.
		for _, tt := range []struct {
			name, ctype string
			data        []byte
			status      int
		}{
			{"avatar.png", "image/png", []byte("I am only text, renamed to .png\n"), 422},
			{"avatar.gif", "image/gif", []byte("GIF89a and then nothing"), 422},
			{"empty.png", "image/png", nil, 422},
			{"avatar.svg", "image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), 422},
			{"huge.png", "image/png", pngBytes(t, image.NewGray(image.Rect(0, 0, 4097, 2))), 422},
		} {
			r := uploadAvatar(e, alice.Token, tt.name, tt.ctype, tt.data).Expect(t, tt.status)
			if l := locs(t, r); !slices.Equal(l, []string{"body.file"}) {
				t.Fatalf("%s: 422 at %v", tt.name, l)
			}
		}
		// A decompression bomb: refused from its header (the reason names the
		// header's dimensions), before anything is decoded.
		var bomb validationBody
		uploadAvatar(e, alice.Token, "bomb.png", "image/png", pngBomb(100000, 100000)).Expect(t, 422).JSON(t, &bomb)
		if !strings.Contains(bomb.Detail[0].Msg, "100000x100000") {
			t.Fatalf("bomb: %v", bomb.Detail)
		}
		// Too large: 413 with a clear detail.
		r := uploadAvatar(e, alice.Token, "big.png", "image/png", make([]byte, 3<<20)).Expect(t, 413)
		if !strings.Contains(r.Detail(), "too large") {
			t.Fatalf("413 detail %q", r.Detail())
		}
		// Not multipart, or without the file field.
		e.Do(apitest.Request{Method: "POST", Path: "/api/profile/avatar", Token: alice.Token, Body: map[string]any{"file": "x"}}).Expect(t, 422)
		body, h := avatarUpload(t, "picture", "me.png", "image/png", pngBytes(t, gradient(10, 10)))
		if l := locs(t, e.Do(apitest.Request{Method: "POST", Path: "/api/profile/avatar", Token: alice.Token, Body: body, Header: h}).Expect(t, 422)); !slices.Equal(l, []string{"body.file"}) {
			t.Fatalf("missing file: 422 at %v", l)
		}
		e.Do(apitest.Request{Method: "POST", Path: "/api/profile/avatar", Token: alice.Token, Body: "--x\r\nbroken",
			Header: http.Header{"Content-Type": {"multipart/form-data; boundary=x"}}}).Expect(t, 422)
		uploadAvatar(e, "", "me.png", "image/png", pngBytes(t, gradient(10, 10))).Expect(t, 401)
		if got := getProfile(t, e, alice.Token); got.AvatarURL == nil || *got.AvatarURL != second {
			t.Fatalf("a refused upload changed the avatar: %v", got.AvatarURL)
		}

		// Nothing but a stored avatar's name is served.
		for _, path := range []string{
			"/avatars/0123456789abcdef0123456789abcdef.png", "/avatars/" + strings.ToUpper(strings.TrimPrefix(second, "/avatars/")),
			"/avatars/..%2fsecret_key", "/avatars/%2e%2e", "/avatars/secret_key", "/avatars/tuxlab.db",
		} {
			e.Get(path, "").Expect(t, 404)
		}
		for _, path := range []string{"/avatars/", "/avatars"} {
			if r := e.Get(path, ""); r.Status != 404 && r.Status != 301 {
				t.Fatalf("%s answered %d", path, r.Status)
			}
		}

		// Bob has no avatar: deleting changes and records nothing.
		e.Do(apitest.Request{Method: "DELETE", Path: "/api/profile/avatar", Token: bob.Token}).Expect(t, 200).JSON(t, &p)
		if p.AvatarURL != nil || p.Username != "bob" {
			t.Fatalf("bob %+v", p)
		}
		fetchAvatar(t, e, second, 240) // bob's delete left alice's avatar alone

		// Delete: the URL goes null, the file leaves the disk, the URL 404s.
		e.Do(apitest.Request{Method: "DELETE", Path: "/api/profile/avatar", Token: alice.Token}).Expect(t, 200).JSON(t, &p)
		if p.AvatarURL != nil {
			t.Fatalf("avatar_url after delete %v", *p.AvatarURL)
		}
		if exists(t, avatarFile(e, second)) {
			t.Fatal("deleted avatar still on disk")
		}
		e.Get(second, "").Expect(t, 404)
		if left, _ := os.ReadDir(filepath.Join(e.Config.DataDir, "avatars")); len(left) != 0 {
			t.Fatalf("avatar directory keeps %v", left)
		}

		expectKinds(t, e, alice.ID, "avatar_changed", "avatar_changed", "avatar_changed")
		expectKinds(t, e, bob.ID)
	})
}

// TestAvatarSizeLimit runs with the server's body limit raised above the
// avatar's, so the avatar's own limit of 2 MiB is what answers.
func TestAvatarSizeLimit(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		alice := e.CreateUser("alice", auth.RoleStudent)
		// Exactly 2 MiB: a PNG followed by padding, which the decoder never reads.
		img := pngBytes(t, gradient(64, 64))
		exact := append(img, make([]byte, 2<<20-len(img))...)
		var p profileBody
		uploadAvatar(e, alice.Token, "exact.png", "image/png", exact).Expect(t, 200).JSON(t, &p)
		fetchAvatar(t, e, *p.AvatarURL, 64)
		r := uploadAvatar(e, alice.Token, "over.png", "image/png", append(exact, 0)).Expect(t, 413)
		if !strings.Contains(r.Detail(), "2 MiB") {
			t.Fatalf("413 detail %q", r.Detail())
		}
		expectKinds(t, e, alice.ID, "avatar_changed")
	}, func(c *config.Config) { c.MaxBodyBytes = 8 << 20 })
}

// TestProfileDeleteUserRemovesAvatar: deleting an account through the profile
// service removes its avatar file once the row is gone.
func TestProfileDeleteUserRemovesAvatar(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		e.CreateUser("root", auth.RoleAdmin)
		alice := e.CreateUser("alice", auth.RoleStudent)
		var p profileBody
		uploadAvatar(e, alice.Token, "me.png", "image/png", pngBytes(t, gradient(40, 40))).Expect(t, 200).JSON(t, &p)
		file := avatarFile(e, *p.AvatarURL)
		ctx := context.Background()
		err := e.App.Profiles.DeleteUser(ctx, alice.ID, func(ctx context.Context) error { return e.App.Auth.DeleteUser(ctx, alice.ID) })
		if err != nil {
			t.Fatal(err)
		}
		if exists(t, file) {
			t.Fatal("a deleted user's avatar is still on disk")
		}
		e.Get(*p.AvatarURL, "").Expect(t, 404)
		e.Get("/api/profile/me", alice.Token).Expect(t, 401)
	})
}
