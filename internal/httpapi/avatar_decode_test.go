package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/profile"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// progressiveJPEG is a valid progressive greyscale JPEG of w×h pixels made of
// scans scans of a few bytes each (one run of end-of-band codes over every
// block): image/jpeg walks every block of the image once per scan, so a
// 4096x4096 one of thousands of scans, a few tens of KiB, takes it many
// seconds of CPU.
func progressiveJPEG(w, h, scans int) []byte {
	segment := func(marker byte, data ...byte) []byte {
		return append(binary.BigEndian.AppendUint16([]byte{0xff, marker}, uint16(len(data)+2)), data...)
	}
	out := []byte{0xff, 0xd8}
	out = append(out, segment(0xdb, append([]byte{0}, bytes.Repeat([]byte{1}, 64)...)...)...)          // DQT
	out = append(out, segment(0xc2, 8, byte(h>>8), byte(h), byte(w>>8), byte(w), 1, 1, 0x11, 0)...)    // SOF2, grey
	out = append(out, segment(0xc4, append(append([]byte{0x10, 1}, make([]byte, 15)...), 0xe0)...)...) // DHT: "0" is EOBRUN 2^14
	runs := ((w+7)/8*((h+7)/8) + 1<<14 - 1) >> 14
	data := make([]byte, (runs*15+7)/8)
	if pad := len(data)*8 - runs*15; pad > 0 {
		data[len(data)-1] = 1<<pad - 1
	}
	for range scans {
		out = append(append(out, segment(0xda, 1, 1, 0x00, 1, 63, 0)...), data...) // SOS: AC 1 to 63
	}
	return append(out, 0xff, 0xd9)
}

// TestAvatarRefusesCostlyJPEG: a JPEG of thousands of scans is refused from
// its markers, before any decoding, with the reason; one of a few scans, as a
// progressive JPEG has, is decoded as usual.
func TestAvatarRefusesCostlyJPEG(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		alice := e.CreateUser("alice", auth.RoleStudent)
		r := uploadAvatar(e, alice.Token, "photo.jpg", "image/jpeg", progressiveJPEG(4096, 4096, 5000)).Expect(t, 422)
		var refused validationBody
		r.JSON(t, &refused)
		if l := locs(t, r); !slices.Equal(l, []string{"body.file"}) || !strings.Contains(refused.Detail[0].Msg, "The JPEG has 5000 scans: at most 32") {
			t.Fatalf("refusal at %v: %+v", l, refused.Detail)
		}
		expectKinds(t, e, alice.ID)
		if got := getProfile(t, e, alice.Token); got.AvatarURL != nil {
			t.Fatalf("a refused upload set %s", *got.AvatarURL)
		}

		var p profileBody
		uploadAvatar(e, alice.Token, "photo.jpg", "image/jpeg", progressiveJPEG(64, 48, 10)).Expect(t, 200).JSON(t, &p)
		fetchAvatar(t, e, *p.AvatarURL, 48)
		expectKinds(t, e, alice.ID, "avatar_changed")
	})
}

// heldDecodes is avatar image work that waits at a gate before doing the
// real work, so a test can hold a decode for as long as it likes.
type heldDecodes struct {
	started chan struct{} // a send per decode that reaches the gate
	open    chan struct{} // closed to let decodes through
	running atomic.Int32  // decodes at the gate or past it, not yet ended
}

// heldEnv starts tuxlab on eng with its avatar decodes held by a
// heldDecodes, one at a time, each upload waiting at most timeout. The
// decodes are let through when the test ends, before the server is closed
// (which waits for every request).
func heldEnv(t *testing.T, eng store.Engine, timeout time.Duration) (*apitest.Env, *heldDecodes) {
	h := &heldDecodes{started: make(chan struct{}, 64), open: make(chan struct{})}
	e := apitest.New(t, eng, func(c *config.Config) {
		c.AvatarNormalize, c.AvatarDecoders, c.AvatarDecodeTimeout = h.normalize, 1, timeout
	})
	t.Cleanup(h.release)
	return e, h
}

func (h *heldDecodes) normalize(data []byte) ([]byte, error) {
	h.running.Add(1)
	defer h.running.Add(-1)
	h.started <- struct{}{}
	<-h.open
	return profile.Normalize(data)
}

func (h *heldDecodes) release() {
	select {
	case <-h.open:
	default:
		close(h.open)
	}
}

// eachEngine runs fn per engine in parallel: apitest.Each for tests whose
// options hold state of their own per server.
func eachEngine(t *testing.T, fn func(t *testing.T, eng store.Engine)) {
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			fn(t, eng)
		})
	}
}

// avatarRequestsEnded is how many avatar uploads the server has finished
// handling, from its metrics (counted once the handler has returned).
func avatarRequestsEnded(t *testing.T, e *apitest.Env) int {
	t.Helper()
	r := e.Get("/metrics", "").Expect(t, 200)
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, `tuxlab_http_requests_total{method="POST",route="POST /api/profile/avatar",`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q", line)
		}
		n += int(v)
	}
	return n
}

// uploadTo uploads img as the avatar of token's user from a goroutine of its
// own, and sends the answer to answers.
func uploadTo(t *testing.T, e *apitest.Env, token string, img []byte, answers chan<- *apitest.Response) {
	body, hdr := avatarUpload(t, "file", "me.png", "image/png", img)
	go func() {
		r, err := e.Send(apitest.Request{Method: "POST", Path: "/api/profile/avatar", Token: token, Body: body, Header: hdr})
		if err != nil {
			r = &apitest.Response{Status: -1, Body: []byte(err.Error())}
		}
		answers <- r
	}()
}

// receive waits for a value from ch; a minute without one fails the test
// (what it waits for then never comes) instead of hanging the run.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("%s did not come within a minute", what)
		panic("unreachable")
	}
}

func expect503(t *testing.T, r *apitest.Response, detail string) {
	t.Helper()
	r.Expect(t, 503)
	if !strings.Contains(r.Detail(), detail) {
		t.Fatalf("503 detail %q, want %q", r.Detail(), detail)
	}
	if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < 1 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
}

// TestAvatarDecodesAreBounded: decodes run off the request's goroutine, a
// bounded number at once with a bounded queue (503 with Retry-After past
// it); an upload whose client went away, or whose time is up, ends at once
// while its decode still runs, and that decode keeps its place until it ends.
func TestAvatarDecodesAreBounded(t *testing.T) {
	t.Parallel()
	img := pngBytes(t, gradient(40, 40))
	t.Run("queue", func(t *testing.T) {
		t.Parallel()
		eachEngine(t, func(t *testing.T, eng store.Engine) {
			e, h := heldEnv(t, eng, time.Minute)
			alice := e.CreateUser("alice", auth.RoleStudent)
			answers := make(chan *apitest.Response, 10)
			uploadTo(t, e, alice.Token, img, answers)
			<-h.started // the one decoder is busy
			for range profile.WaitingPerDecoder + 1 {
				uploadTo(t, e, alice.Token, img, answers)
			}
			// Every upload but one waits for the decoder: the one past the queue answers first.
			expect503(t, receive(t, answers, "an answer"), "Too many images are being processed")
			if n := h.running.Load(); n != 1 {
				t.Fatalf("%d decodes running, want 1", n)
			}
			h.release()
			for range 1 + profile.WaitingPerDecoder {
				receive(t, answers, "an answer").Expect(t, 200)
			}
			expectKinds(t, e, alice.ID, slices.Repeat([]string{"avatar_changed"}, 1+profile.WaitingPerDecoder)...)
		})
	})
	t.Run("client goes away", func(t *testing.T) {
		t.Parallel()
		eachEngine(t, func(t *testing.T, eng store.Engine) {
			e, h := heldEnv(t, eng, time.Minute)
			alice := e.CreateUser("alice", auth.RoleStudent)
			body, hdr := avatarUpload(t, "file", "me.png", "image/png", img)
			ctx, cancel := context.WithCancel(context.Background())
			req, err := http.NewRequestWithContext(ctx, "POST", e.URL+"/api/profile/avatar", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = hdr.Clone()
			req.Header.Set("Authorization", "Bearer "+alice.Token)
			gone := make(chan error, 1)
			go func() {
				resp, err := e.Server.Client().Do(req)
				if err == nil {
					resp.Body.Close()
				}
				gone <- err
			}()
			<-h.started
			cancel()
			if err := <-gone; !errors.Is(err, context.Canceled) {
				t.Fatalf("client: %v", err)
			}
			// The server ends the request while the decode is still held.
			for deadline := time.Now().Add(30 * time.Second); avatarRequestsEnded(t, e) < 1; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the upload is still being handled after its client left")
				}
			}
			if h.running.Load() != 1 {
				t.Fatal("the decode is not running any more")
			}
			expectKinds(t, e, alice.ID)
			h.release()
			var p profileBody
			uploadAvatar(e, alice.Token, "me.png", "image/png", img).Expect(t, 200).JSON(t, &p)
			entries, err := os.ReadDir(filepath.Join(e.Config.DataDir, "avatars"))
			if err != nil || len(entries) != 1 || "/avatars/"+entries[0].Name() != *p.AvatarURL {
				t.Fatalf("avatar files %v (%v), want only %s", entries, err, *p.AvatarURL)
			}
			expectKinds(t, e, alice.ID, "avatar_changed")
		})
	})
	t.Run("time is up", func(t *testing.T) {
		t.Parallel()
		eachEngine(t, func(t *testing.T, eng store.Engine) {
			e, h := heldEnv(t, eng, 200*time.Millisecond)
			alice := e.CreateUser("alice", auth.RoleStudent)
			answers := make(chan *apitest.Response, 2)
			uploadTo(t, e, alice.Token, img, answers)
			expect503(t, receive(t, answers, "an answer"), "Processing the image took too long")
			if h.running.Load() != 1 {
				t.Fatal("the decode is not running any more")
			}
			// The abandoned decode keeps the one decoder: the next upload's time runs out waiting.
			uploadTo(t, e, alice.Token, img, answers)
			expect503(t, receive(t, answers, "an answer"), "Processing the image took too long")
			expectKinds(t, e, alice.ID)
			h.release()
			for deadline := time.Now().Add(30 * time.Second); h.running.Load() > 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the released decode never ended")
				}
			}
			uploadAvatar(e, alice.Token, "me.png", "image/png", img).Expect(t, 200)
			expectKinds(t, e, alice.ID, "avatar_changed")
		})
	})
}

// TestShutdownDoesNotWaitForDecodes: a server shutting down answers an
// upload whose decode is under way with 503 and stops cleanly within its
// grace, though the decode never ends.
func TestShutdownDoesNotWaitForDecodes(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, eng store.Engine) {
		e, h := heldEnv(t, eng, time.Hour)
		alice := e.CreateUser("alice", auth.RoleStudent)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		served := make(chan error, 1)
		go func() { served <- e.App.Serve(ctx, ln, 20*time.Second) }()
		body, hdr := avatarUpload(t, "file", "me.png", "image/png", pngBytes(t, gradient(40, 40)))
		req, err := http.NewRequest("POST", "http://"+ln.Addr().String()+"/api/profile/avatar", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = hdr.Clone()
		req.Header.Set("Authorization", "Bearer "+alice.Token)
		answer := make(chan *apitest.Response, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answer <- &apitest.Response{Status: -1, Body: []byte(err.Error())}
				return
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			b.ReadFrom(resp.Body)
			answer <- &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: b.Bytes()}
		}()
		<-h.started
		stop()
		expect503(t, receive(t, answer, "the upload's answer"), "The server is shutting down")
		if err := receive(t, served, "the end of Serve"); err != nil {
			t.Fatalf("serve: %v", err)
		}
		if h.running.Load() != 1 {
			t.Fatal("the decode ended: the test proves nothing")
		}
		expectKinds(t, e, alice.ID)
	})
}
