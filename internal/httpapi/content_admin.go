package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"tuxlab/internal/actor"
	"tuxlab/internal/attempt"
	"tuxlab/internal/lesson"
)

// contentAdmin is the admin CRUD shape that exams and laboratories share:
// list, read, create, update and delete authored content of type T, read
// from the request as In and written as the response R. Each domain passes
// its own service calls, input reader and response type.
type contentAdmin[T, In, R any] struct {
	all     func(context.Context, actor.Actor) ([]T, error) // what the caller may change
	one     func(context.Context, actor.Actor, int64) (T, error)
	create  func(context.Context, actor.Actor, In) (T, error)
	update  func(context.Context, actor.Actor, int64, In) (T, error)
	remove  func(ctx context.Context, a actor.Actor, id int64, cascade bool) error
	input   func(*http.Request) (In, error)
	respond func(T) R
	query   []string // the input fields that come as query parameters
	deleted string   // the detail of a delete's response
}

func (c contentAdmin[T, In, R]) list(w http.ResponseWriter, r *http.Request) error {
	return writeAll(w, r, func(ctx context.Context) ([]T, error) { return c.all(ctx, callerOf(r)) }, c.respond)
}

func (c contentAdmin[T, In, R]) get(w http.ResponseWriter, r *http.Request) error {
	return writeOne(w, r, func(ctx context.Context, id int64) (T, error) { return c.one(ctx, callerOf(r), id) }, c.respond)
}

func (c contentAdmin[T, In, R]) post(w http.ResponseWriter, r *http.Request) error {
	in, err := c.input(r)
	if err != nil {
		return err
	}
	it, err := c.create(r.Context(), callerOf(r), in)
	if err != nil {
		return locate(err, c.query...)
	}
	writeJSON(w, http.StatusCreated, c.respond(it))
	return nil
}

func (c contentAdmin[T, In, R]) put(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	in, err := c.input(r)
	if err != nil {
		return err
	}
	it, err := c.update(r.Context(), callerOf(r), id, in)
	if err != nil {
		return locate(err, c.query...)
	}
	writeJSON(w, http.StatusOK, c.respond(it))
	return nil
}

func (c contentAdmin[T, In, R]) delete(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q := newQuery(r)
	cascade := q.optBool("cascade")
	if err := q.err(); err != nil {
		return err
	}
	if err := c.remove(r.Context(), callerOf(r), id, cascade != nil && *cascade); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"detail": c.deleted, "id": id})
	return nil
}

// writeAll answers every item that all lists, each as respond makes it.
func writeAll[T, R any](w http.ResponseWriter, r *http.Request, all func(context.Context) ([]T, error), respond func(T) R) error {
	items, err := all(r.Context())
	if err != nil {
		return err
	}
	out := make([]R, len(items))
	for i, it := range items {
		out[i] = respond(it)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// writeOne answers the item that the path's {id} names, read with one, as
// respond makes it.
func writeOne[T, R any](w http.ResponseWriter, r *http.Request, one func(context.Context, int64) (T, error), respond func(T) R) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	it, err := one(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, respond(it))
	return nil
}

// serveAttempt answers a learner's call on the path's {id} (an exam, a lab,
// or an attempt of one) with status and what respond makes of the attempt
// and its subject that call returns.
func serveAttempt[A, S, R any](w http.ResponseWriter, r *http.Request, status int,
	call func(context.Context, actor.Actor, int64) (A, S, error), respond func(A, S) R) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	a, subject, err := call(r.Context(), callerOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, status, respond(a, subject))
	return nil
}

// contentHead and contentBody are the fields every exam and lab response
// starts with, in the contract's order (a lab's section_id comes between).
type contentHead struct {
	ID       int64  `json:"id"`
	Slug     string `json:"slug"`
	ModuleID *int64 `json:"module_id"`
}

type contentBody struct {
	TemplateID       *int64 `json:"template_id"`
	Title            string `json:"title"`
	Description      string `json:"description"`
	DescriptionHTML  string `json:"description_html"`
	TimeLimitMinutes int    `json:"time_limit_minutes"`
	PassingScore     int    `json:"passing_score"`
}

// ownership is what authoring responses say of an item's owner and state.
type ownership struct {
	OwnerID   *int64 `json:"owner_id"`
	Published bool   `json:"published"`
}

func newOwnership(a lesson.Access) ownership {
	return ownership{OwnerID: a.OwnerID, Published: a.Published}
}

// attemptOutcome is the part of an exam or lab attempt's response that
// says when it runs and how it scored.
type attemptOutcome struct {
	StartedAt  timestamp  `json:"started_at"`
	ExpiresAt  timestamp  `json:"expires_at"`
	FinishedAt *timestamp `json:"finished_at"`
	Points     int        `json:"points"`
	MaxPoints  int        `json:"max_points"`
	Score      int        `json:"score"`
	Passed     bool       `json:"passed"`
}

func newAttemptOutcome(a *attempt.Attempt) attemptOutcome {
	return attemptOutcome{StartedAt: timestamp(a.StartedAt), ExpiresAt: timestamp(a.ExpiresAt), FinishedAt: optTime(a.FinishedAt),
		Points: a.Points, MaxPoints: a.MaxPoints, Score: a.Score, Passed: a.Passed}
}

// terminalURL is where the WebSocket terminal of sandbox id is.
func terminalURL(id int64) string { return "/ws/terminal/" + strconv.FormatInt(id, 10) }

// optTerminalURL is the terminal of sandbox id, if there is one.
func optTerminalURL(id *int64) *string {
	if id == nil {
		return nil
	}
	u := terminalURL(*id)
	return &u
}
