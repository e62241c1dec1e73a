package httpapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"tuxlab/internal/errs"
)

// statusOf is the one map from error kinds to HTTP status codes.
var statusOf = map[errs.Kind]int{
	errs.Internal:        http.StatusInternalServerError,
	errs.Invalid:         http.StatusUnprocessableEntity,
	errs.Unauthenticated: http.StatusUnauthorized,
	errs.Forbidden:       http.StatusForbidden,
	errs.NotFound:        http.StatusNotFound,
	errs.Conflict:        http.StatusConflict,
	errs.TooLarge:        http.StatusRequestEntityTooLarge,
	errs.TooManyRequests: http.StatusTooManyRequests,
	errs.Unavailable:     http.StatusServiceUnavailable,
	errs.UpgradeRequired: http.StatusUpgradeRequired,
	errs.UnsupportedType: http.StatusUnsupportedMediaType,
	errs.BadRequest:      http.StatusBadRequest,
}

// internalDetail is all a client learns of a server fault.
const internalDetail = "Internal server error"

// writeError answers with the contract's error shape: {"detail": "..."} or, for
// validation errors, {"detail": [{"loc", "msg", "type"}...]}. Errors that are not
// *errs.Error are logged with their cause and answered with a fixed text.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *errs.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			return // the client went away; nobody is listening
		}
		s.log.ErrorContext(r.Context(), "request failed", "request_id", requestID(r.Context()),
			"method", r.Method, "path", loggedPath(r.URL.Path), "error", err.Error())
		writeJSON(w, http.StatusInternalServerError, map[string]any{"detail": internalDetail})
		return
	}
	status, _ := Describe(e)
	if e.Kind == errs.Internal {
		s.log.ErrorContext(r.Context(), "request failed", "request_id", requestID(r.Context()), "error", err.Error())
	}
	if e.Kind == errs.Unauthenticated {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(e.RetryAfter)))
	}
	body := map[string]any{}
	for k, v := range e.Extra {
		body[k] = v
	}
	switch {
	case e.Kind == errs.Internal:
		body["detail"] = internalDetail
	case len(e.Fields) > 0:
		body["detail"] = e.Fields
	default:
		body["detail"] = e.Detail
	}
	writeJSON(w, status, body)
}

// Describe tells what err means to a client: its status and a detail safe to
// show (for validation errors, the first field's problem; for anything that
// is not an *errs.Error, 500 and a fixed text). writeError answers with it,
// and terminals that end after their upgrade say it (terminal.Refuse).
func Describe(err error) (status int, detail string) {
	var e *errs.Error
	if !errors.As(err, &e) || e.Kind == errs.Internal {
		return http.StatusInternalServerError, internalDetail
	}
	detail = e.Detail
	if len(e.Fields) > 0 {
		f := e.Fields[0]
		detail = f.Msg
		if len(f.Loc) > 1 {
			detail = fmt.Sprint(f.Loc[len(f.Loc)-1]) + ": " + f.Msg
		}
	}
	return statusOf[e.Kind], detail
}

// fail returns a handler-level error of kind k.
func fail(k errs.Kind, detail string) error { return errs.E(k, detail) }

var (
	errNotFound     = fail(errs.NotFound, "Not Found")
	errBodyTooLarge = fail(errs.TooLarge, "Request body too large")
)

// retryAfterSeconds rounds a wait up to whole seconds, at least one, for Retry-After.
func retryAfterSeconds(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }
