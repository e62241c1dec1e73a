package httpapi_test

import (
	"context"
	"fmt"
	"testing"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/sandbox"
)

// The requests the exam, lab and sandbox tests repeat. Each returns the
// response, or checks the status and fails the test as Expect does, so a
// failure still names the status and body it got.

// rootAndAlice creates the admin "root" and the learner "alice" whom most
// exam and lab tests act as.
func rootAndAlice(e *apitest.Env) (admin, alice *apitest.User) {
	return e.CreateUser("root", auth.RoleAdmin), e.CreateUser("alice", auth.RoleStudent)
}

// post sends body (nil for none) to path as the user with token.
func post(e *apitest.Env, token, path string, body any) *apitest.Response {
	return e.Do(apitest.Request{Method: "POST", Path: path, Token: token, Body: body})
}

// noAnswers is an exam submission that answers nothing.
func noAnswers() map[string]any {
	return map[string]any{"answers": []any{}}
}

// stopSandbox stops sandbox id as the user with token, which must succeed.
func stopSandbox(t *testing.T, e *apitest.Env, token string, id int64) {
	t.Helper()
	post(e, token, fmt.Sprintf("/api/containers/%d/stop", id), nil).Expect(t, 200)
}

// deleteSandbox deletes sandbox id as the user with token, which must succeed.
func deleteSandbox(t *testing.T, e *apitest.Env, token string, id int64) {
	t.Helper()
	e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/containers/%d", id), Token: token}).Expect(t, 200)
}

// execIn runs sc in sandbox id for its owner userID, as a check does, and
// returns how it ended; only an error running it fails the test.
func execIn(t *testing.T, e *apitest.Env, userID, id int64, sc sandbox.Script) *sandbox.Result {
	t.Helper()
	res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(userID), id, sc)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// listSandboxes is the user's own sandboxes, as the sandbox page lists them.
func listSandboxes(t *testing.T, e *apitest.Env, token string) []containerBody {
	t.Helper()
	var cs []containerBody
	e.Get("/api/containers/sandbox", token).Expect(t, 200).JSON(t, &cs)
	return cs
}
