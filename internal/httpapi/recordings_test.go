package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/recording"
)

type recordingBody struct {
	ID          int64   `json:"id"`
	UserID      int64   `json:"user_id"`
	ContainerID int64   `json:"container_id"`
	AttemptKind *string `json:"attempt_kind"`
	AttemptID   *int64  `json:"attempt_id"`
	Width       int     `json:"width"`
	Height      int     `json:"height"`
	EndedAt     *string `json:"ended_at"`
	Bytes       int64   `json:"bytes"`
	Truncated   bool    `json:"truncated"`
	URL         string  `json:"url"`
}

// cast is a parsed asciicast v2 file.
type cast struct {
	Header struct {
		Version   int    `json:"version"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
		Timestamp int64  `json:"timestamp"`
		Title     string `json:"title"`
	}
	Output  string   // every "o" event's data, in order
	Resizes []string // every "r" event's data
}

// parseCast reads an asciicast v2 file, failing the test on anything that
// is not one: a header line, then [time, code, data] lines with times that
// never go back.
func parseCast(t *testing.T, b []byte) cast {
	t.Helper()
	var c cast
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 4<<20)
	if !sc.Scan() {
		t.Fatal("an empty cast")
	}
	if err := json.Unmarshal(sc.Bytes(), &c.Header); err != nil || c.Header.Version != 2 {
		t.Fatalf("header %q: %v", sc.Text(), err)
	}
	var out strings.Builder
	last := 0.0
	for sc.Scan() {
		var ev [3]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event %q: %v", sc.Text(), err)
		}
		at, ok1 := ev[0].(float64)
		code, ok2 := ev[1].(string)
		data, ok3 := ev[2].(string)
		if !ok1 || !ok2 || !ok3 || at < last {
			t.Fatalf("event %q (after %f)", sc.Text(), last)
		}
		last = at
		switch code {
		case "o":
			out.WriteString(data)
		case "r":
			c.Resizes = append(c.Resizes, data)
		default:
			t.Fatalf("event code %q", code)
		}
	}
	c.Output = out.String()
	return c
}

// sandboxRecordings lists sandbox id's recordings as the user with token.
func sandboxRecordings(t *testing.T, e *apitest.Env, token string, id int64) []recordingBody {
	t.Helper()
	var rs []recordingBody
	e.Get(fmt.Sprintf("/api/containers/%d/recordings", id), token).Expect(t, 200).JSON(t, &rs)
	return rs
}

// TestRecordingOfLabAttempt: a lab attempt's terminal is recorded (and says
// so); what the shell printed comes back as asciicast v2, in order; the
// lab's results link it; the learner and the instructor of their class
// replay it, anyone else gets 404; a free-play terminal is recorded only
// when asked; the owner deletes a recording.
func TestRecordingOfLabAttempt(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		bob := e.CreateUser("bob", auth.RoleStudent)
		teacher := e.CreateUser("teacher", auth.RoleInstructor)
		stranger := e.CreateUser("stranger", auth.RoleInstructor)
		var class struct {
			JoinCode string `json:"join_code"`
		}
		post(e, teacher.Token, "/api/classes", map[string]any{"name": "Shell basics"}).Expect(t, 201).JSON(t, &class)
		post(e, alice.Token, "/api/classes/join", map[string]any{"code": class.JoinCode}).Expect(t, 201)

		mod := loadFixture(t, e)["shell"]
		labID := createLab(t, e, admin, fmt.Sprintf("slug=rec-lab&title=Recorded&module_id=%d&template_id=%d&time_limit_minutes=30", mod, busyboxTemplate(t, e)),
			simpleLabBody())
		var at labAttemptBody
		post(e, alice.Token, fmt.Sprintf("/api/laboratories/%d/start", labID), nil).Expect(t, 201).JSON(t, &at)
		box := *at.ContainerID
		if got := sandboxRecordings(t, e, alice.Token, box); len(got) != 0 {
			t.Fatalf("recordings before a terminal: %+v", got)
		}

		tc := e.OpenTerminal(t, terminalPath(box), alice.Token, 100, 30)
		if on, _ := tc.AwaitControl("session", 30*time.Second)["recording"].(bool); !on {
			t.Fatalf("a lab attempt's session message says nothing of a recording: %v", tc.Control())
		}
		tc.Exchange("echo first-$((6*7))-mark\n", "first-42-mark")
		tc.SendControl(map[string]any{"type": "resize", "cols": 90, "rows": 20})
		tc.Exchange("echo second-$((2+3))-mark\n", "second-5-mark")
		tc.End()
		e.WaitTerminalsClosed(t, time.Minute)

		rs := sandboxRecordings(t, e, alice.Token, box)
		if len(rs) != 1 {
			t.Fatalf("recordings %+v", rs)
		}
		rec := rs[0]
		if rec.AttemptKind == nil || *rec.AttemptKind != "lab" || rec.AttemptID == nil || *rec.AttemptID != at.ID || rec.EndedAt == nil ||
			rec.UserID != alice.ID || rec.Truncated || rec.Bytes == 0 || rec.Width != 100 || rec.Height != 30 {
			t.Fatalf("recording %+v", rec)
		}
		r := e.Get(rec.URL, alice.Token).Expect(t, 200)
		if ct := r.Header.Get("Content-Type"); ct != "application/x-asciicast" || r.Header.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.Contains(r.Header.Get("Content-Security-Policy"), "sandbox") {
			t.Fatalf("content type %q, headers %v", ct, r.Header)
		}
		c := parseCast(t, r.Body)
		if c.Header.Width != 100 || c.Header.Height != 30 || c.Header.Timestamp == 0 {
			t.Fatalf("header %+v", c.Header)
		}
		first, second := strings.Index(c.Output, "first-42-mark"), strings.Index(c.Output, "second-5-mark")
		if first < 0 || second < first {
			t.Fatalf("the markers are not in the recording in order (%d, %d): %q", first, second, c.Output)
		}
		if len(c.Resizes) == 0 || c.Resizes[len(c.Resizes)-1] != "90x20" {
			t.Fatalf("resizes %q", c.Resizes)
		}

		// The lab's results link the recording.
		var results struct {
			RecordingID *int64 `json:"recording_id"`
		}
		e.Get(fmt.Sprintf("/api/laboratories/attempts/%d/results", at.ID), alice.Token).Expect(t, 200).JSON(t, &results)
		if results.RecordingID == nil || *results.RecordingID != rec.ID {
			t.Fatalf("results link recording %v, want %d", results.RecordingID, rec.ID)
		}

		// Who may replay it: the learner, the instructor of their class, an admin.
		e.Get(rec.URL, teacher.Token).Expect(t, 200)
		e.Get(rec.URL, admin.Token).Expect(t, 200)
		if got := sandboxRecordings(t, e, teacher.Token, box); len(got) != 1 {
			t.Fatalf("the teacher sees %+v", got)
		}
		for _, u := range []*apitest.User{bob, stranger} {
			e.Get(rec.URL, u.Token).Expect(t, 404)
			e.Get(fmt.Sprintf("/api/containers/%d/recordings", box), u.Token).Expect(t, 404)
			del(e, u.Token, rec.URL).Expect(t, 404)
		}
		del(e, teacher.Token, rec.URL).Expect(t, 404)
		e.Get("/api/recordings/999999", alice.Token).Expect(t, 404)
		e.Get("/api/containers/999999/recordings", alice.Token).Expect(t, 404)
		e.Get("/api/recordings/x", alice.Token).Expect(t, 422)

		// Free play: not recorded unless asked.
		free := createSandbox(t, e, alice.Token, busyboxTemplate(t, e))
		tc = e.OpenTerminal(t, terminalPath(free.ID), alice.Token, 80, 24)
		if on, _ := tc.AwaitControl("session", 30*time.Second)["recording"].(bool); on {
			t.Fatal("a free-play terminal says it is recorded")
		}
		tc.Exchange("echo unrecorded-$((1+1))\n", "unrecorded-2")
		tc.End()
		e.WaitTerminalsClosed(t, time.Minute)
		if got := sandboxRecordings(t, e, alice.Token, free.ID); len(got) != 0 {
			t.Fatalf("free play was recorded: %+v", got)
		}
		tc = e.DialTerminal(t, terminalPath(free.ID)+"?record=true&token="+alice.Token, nil)
		if on, _ := tc.AwaitControl("session", 30*time.Second)["recording"].(bool); !on {
			t.Fatal("record=true: the session message says nothing of a recording")
		}
		tc.Exchange("echo asked-$((2+2))\n", "asked-4")
		tc.End()
		e.WaitTerminalsClosed(t, time.Minute)
		rs = sandboxRecordings(t, e, alice.Token, free.ID)
		if len(rs) != 1 || rs[0].AttemptKind != nil || !strings.Contains(parseCast(t, e.Get(rs[0].URL, alice.Token).Expect(t, 200).Body).Output, "asked-4") {
			t.Fatalf("recordings of free play asked for: %+v", rs)
		}
		var mine []recordingBody
		e.Get("/api/recordings", alice.Token).Expect(t, 200).JSON(t, &mine)
		if len(mine) != 2 || mine[0].ID != rs[0].ID || mine[1].ID != rec.ID {
			t.Fatalf("alice's recordings %+v", mine)
		}
		e.Get("/api/recordings", bob.Token).Expect(t, 200).JSON(t, &mine)
		if len(mine) != 0 {
			t.Fatalf("bob's recordings %+v", mine)
		}

		// The owner deletes one.
		del(e, alice.Token, rs[0].URL).Expect(t, 200)
		e.Get(rs[0].URL, alice.Token).Expect(t, 404)

		// A submitted lab removes its sandbox; its recording stays listed.
		post(e, alice.Token, fmt.Sprintf("/api/laboratories/%d/submit", labID), nil).Expect(t, 200)
		if got := sandboxRecordings(t, e, teacher.Token, box); len(got) != 1 || got[0].ID != rec.ID {
			t.Fatalf("after the sandbox went: %+v", got)
		}
		e.Get(fmt.Sprintf("/api/containers/%d/recordings", box), bob.Token).Expect(t, 404)
	}, func(c *config.Config) { c.RecordingFlush = 100 * time.Millisecond })
}

// TestRecordingRetention: recordings older than the retention period are
// deleted; younger ones stay.
func TestRecordingRetention(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		alice := e.CreateUser("alice", auth.RoleStudent)
		ctx := context.Background()
		now := time.Now().UTC()
		add := func(age time.Duration) int64 {
			r := &recording.Recording{UserID: alice.ID, ContainerID: 42, ContainerName: "gone", Width: 80, Height: 24, StartedAt: now.Add(-age)}
			if err := e.App.Recordings.Begin(ctx, r); err != nil {
				t.Fatal(err)
			}
			if err := e.App.Recordings.Append(ctx, r.ID, []byte("[0.1, \"o\", \"hi\"]\n"), 17, false, &now); err != nil {
				t.Fatal(err)
			}
			return r.ID
		}
		old, young := add(31*24*time.Hour), add(29*24*time.Hour)
		n, err := e.App.Recordings.Purge(ctx)
		if err != nil || n != 1 {
			t.Fatalf("purged %d: %v", n, err)
		}
		e.Get(fmt.Sprintf("/api/recordings/%d", old), alice.Token).Expect(t, 404)
		c := parseCast(t, e.Get(fmt.Sprintf("/api/recordings/%d", young), alice.Token).Expect(t, 200).Body)
		if c.Output != "hi" || c.Header.Title != "gone" {
			t.Fatalf("cast %+v", c)
		}
		// A deleted sandbox's recordings stay listed for their owner.
		if got := sandboxRecordings(t, e, alice.Token, 42); len(got) != 1 || got[0].ID != young {
			t.Fatalf("recordings of the gone sandbox %+v", got)
		}
		// The background loop purges as it starts, then every interval.
		older := add(40 * 24 * time.Hour)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); e.App.Recordings.Run(runCtx, time.Hour) }()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := e.App.Recordings.Get(ctx, actor.AsAdmin(), older); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the background loop did not delete an old recording")
			}
		}
		stop()
		<-done
		e.Get(fmt.Sprintf("/api/recordings/%d", young), alice.Token).Expect(t, 200)
	})
}

// TestRecordingOfExamAttempt: the terminal of an exam attempt's own sandbox
// is recorded and names the attempt.
func TestRecordingOfExamAttempt(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		ex := createExam(t, e, admin, fmt.Sprintf("slug=rec-exam&title=Recorded&template_id=%d", busyboxTemplate(t, e)),
			map[string]any{"questions": []map[string]any{{"kind": "practical", "prompt": "Anything.", "check": "true"}}})
		var at examAttemptBody
		post(e, alice.Token, fmt.Sprintf("/api/exams/%d/start", ex.ID), nil).Expect(t, 201).JSON(t, &at)
		if at.ContainerID == nil {
			t.Fatalf("an exam attempt without a sandbox: %+v", at)
		}
		tc := e.OpenTerminal(t, terminalPath(*at.ContainerID), alice.Token, 80, 24)
		if on, _ := tc.AwaitControl("session", 30*time.Second)["recording"].(bool); !on {
			t.Fatal("an exam attempt's terminal says nothing of a recording")
		}
		tc.Exchange("echo exam-$((40+2))-mark\n", "exam-42-mark")
		tc.End()
		e.WaitTerminalsClosed(t, time.Minute)
		rs := sandboxRecordings(t, e, alice.Token, *at.ContainerID)
		if len(rs) != 1 || rs[0].AttemptKind == nil || *rs[0].AttemptKind != "exam" || rs[0].AttemptID == nil || *rs[0].AttemptID != at.ID {
			t.Fatalf("recordings %+v", rs)
		}
		if c := parseCast(t, e.Get(rs[0].URL, alice.Token).Expect(t, 200).Body); !strings.Contains(c.Output, "exam-42-mark") || strings.Contains(c.Output, "tuxlab;sized") {
			t.Fatalf("the exam's recording holds %q", c.Output)
		}
	}, func(c *config.Config) { c.RecordingFlush = 100 * time.Millisecond })
}
