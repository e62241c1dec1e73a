package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/recording"
)

// TestBrowserRecordings drives headless Chromium through e2e/recordings.mjs:
// a learner lists their terminal recordings and replays one in the embedded
// player (the marker the recorded shell printed must appear in the player's
// screen), the instructor of their class replays it too, another learner
// is told it does not exist; axe checks the pages in light and dark. The
// recording is made through the recordings service as a terminal makes it
// (the real engine's recording is TestRecordingOfLabAttempt's), so this
// needs no container engine.
func TestBrowserRecordings(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the browser test takes a few seconds")
	}
	node, chromium, e2e, ok := browser(t)
	if !ok {
		return
	}
	e := apitest.New(t, "sqlite")
	learner := e.CreateUser("lea", auth.RoleStudent)
	teacher := e.CreateUser("teach", auth.RoleInstructor)
	other := e.CreateUser("otto", auth.RoleStudent)
	ctx := context.Background()
	class := struct {
		JoinCode string `json:"join_code"`
	}{}
	e.Do(apitest.Request{Method: "POST", Path: "/api/classes", Token: teacher.Token, Body: map[string]any{"name": "Shell"}}).Expect(t, 201).JSON(t, &class)
	e.Do(apitest.Request{Method: "POST", Path: "/api/classes/join", Token: learner.Token, Body: map[string]any{"code": class.JoinCode}}).Expect(t, 201)

	const marker = "replayed-marker-42"
	started := time.Now().UTC().Add(-time.Minute)
	attempt := int64(3)
	r := &recording.Recording{UserID: learner.ID, ContainerID: 7, ContainerName: "Lab: Files", AttemptKind: recording.KindLab, AttemptID: &attempt,
		Width: 80, Height: 24, StartedAt: started}
	if err := e.App.Recordings.Begin(ctx, r); err != nil {
		t.Fatal(err)
	}
	events := "[0.2, \"o\", \"learner@lab:~$ \"]\n" +
		"[0.9, \"o\", \"echo replayed-marker-$((6*7))\\r\\n\"]\n" +
		"[1.0, \"o\", \"" + marker + "\\r\\nlearner@lab:~$ \"]\n" +
		"[1.2, \"r\", \"100x30\"]\n"
	ended := started.Add(2 * time.Second)
	if err := e.App.Recordings.Append(ctx, r.ID, []byte(events), int64(len(events)), false, &ended); err != nil {
		t.Fatal(err)
	}
	shots := shotsDir(t, e2e, "recordings")
	account := func(u *apitest.User) string { return u.Username + ":" + apitest.Password }
	runScript(t, node, e2e, "recordings.mjs", e.URL, shots, []string{"CHROMIUM=" + chromium,
		"TUXLAB_E2E_LEARNER=" + account(learner), "TUXLAB_E2E_TEACHER=" + account(teacher), "TUXLAB_E2E_OTHER=" + account(other),
		"TUXLAB_E2E_RECORDING=" + fmt.Sprint(r.ID), "TUXLAB_E2E_MARKER=" + marker})
}

// TestBrowserRecordedLab drives headless Chromium through
// e2e/recorded-lab.mjs on a real engine: a laboratory's terminal says it
// is recorded, the learner types a command, submits, and the results'
// replay link plays what the shell printed.
func TestBrowserRecordedLab(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the browser test takes half a minute")
	}
	node, chromium, e2e, ok := browser(t)
	if !ok {
		return
	}
	if apitest.RequireEngine(t) == nil { // with the BusyBox test image
		return
	}
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.RecordingFlush = 200 * time.Millisecond })
	admin := e.CreateUser("admin", auth.RoleAdmin)
	learner := e.CreateUser("lea", auth.RoleStudent)
	var templates []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	e.Get("/api/sandbox-templates", "").Expect(t, 200).JSON(t, &templates)
	var busybox int64
	for _, tpl := range templates {
		if tpl.Name == "BusyBox" {
			busybox = tpl.ID
		}
	}
	var lab struct{ ID int64 }
	e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/admin/laboratories?slug=recorded&title=Recorded&template_id=%d&time_limit_minutes=30", busybox),
		Token: admin.Token, Body: map[string]any{"tasks": []map[string]any{{"title": "Anything", "check": "true"}}}}).Expect(t, 201).JSON(t, &lab)
	shots := shotsDir(t, e2e, "recorded-lab")
	runScript(t, node, e2e, "recorded-lab.mjs", e.URL, shots, []string{"CHROMIUM=" + chromium,
		"TUXLAB_E2E_LEARNER=" + learner.Username + ":" + apitest.Password, "TUXLAB_E2E_LAB=" + fmt.Sprint(lab.ID)})
}
