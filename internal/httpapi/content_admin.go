package httpapi

import (
	"context"
	"net/http"

	"tuxlab/internal/actor"
)

// contentAdmin is the admin CRUD shape that exams and laboratories share:
// list, read, create, update and delete authored content of type T, read
// from the request as In and written as the response R. Each domain passes
// its own service calls, input reader and response type.
type contentAdmin[T, In, R any] struct {
	all     func(context.Context) ([]T, error)
	one     func(context.Context, int64) (T, error)
	create  func(context.Context, actor.Actor, In) (T, error)
	update  func(context.Context, actor.Actor, int64, In) (T, error)
	remove  func(ctx context.Context, a actor.Actor, id int64, cascade bool) error
	input   func(*http.Request) (In, error)
	respond func(T) R
	query   []string // the input fields that come as query parameters
	deleted string   // the detail of a delete's response
}

func (c contentAdmin[T, In, R]) list(w http.ResponseWriter, r *http.Request) error {
	return writeAll(w, r, c.all, c.respond)
}

func (c contentAdmin[T, In, R]) get(w http.ResponseWriter, r *http.Request) error {
	return writeOne(w, r, c.one, c.respond)
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
