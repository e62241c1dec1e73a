// Package errs defines the one error type that crosses tuxlab's layers.
//
// Domain packages and the store return *Error values (or wrap them with %w);
// the HTTP layer maps each Kind to a status code in a single place and writes
// the contract's error shape. Any other error is internal: it is logged with
// its cause and answered with a fixed text, never echoed to the client.
package errs

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies an error by what the caller can do about it.
type Kind int

// The kinds of error, each of which the HTTP layer maps to one status code.
const (
	Internal        Kind = iota // a fault of the server: 500
	Invalid                     // the request fails validation: 422
	Unauthenticated             // missing or bad credentials: 401
	Forbidden                   // authenticated but not allowed: 403
	NotFound                    // no such object, or not the caller's: 404
	Conflict                    // the request clashes with current state: 409
	TooLarge                    // the request body is over its limit: 413
	TooManyRequests             // rate limited: 429
	Unavailable                 // a dependency is down or at capacity: 503
	UpgradeRequired             // a WebSocket route asked without a WebSocket upgrade: 426
	UnsupportedType             // the request body is not of a media type the route takes: 415
	BadRequest                  // well-formed, but refers to something that cannot be used (a used or expired one-time token): 400
)

// FieldError is one entry of a validation error: where the bad input is and why.
// Loc starts with the part of the request ("body", "query" or "path") once
// the HTTP layer has placed it (see In); domains report it relative to their input.
type FieldError struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// Error is a classified error with a detail that is safe to show to the client.
type Error struct {
	Kind       Kind
	Detail     string         // safe for the client; the fixed text is used for Internal
	Fields     []FieldError   // for Invalid: every bad field found
	RetryAfter time.Duration  // for TooManyRequests and Unavailable, when known
	Extra      map[string]any // extra members of the error body, such as the id of a clashing object
	Err        error          // the underlying cause, for logs only
}

func (e *Error) Error() string {
	msg := e.Detail
	if msg == "" && len(e.Fields) > 0 {
		msg = e.Fields[0].Msg
	}
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", msg, e.Err)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// E returns a new error of kind k with a client-safe detail.
func E(k Kind, detail string) *Error { return &Error{Kind: k, Detail: detail} }

// Errorf returns a new error of kind k whose detail is formatted.
func Errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Detail: fmt.Sprintf(format, args...)}
}

// Field returns a validation error for a single field.
func Field(loc []any, msg, typ string) *Error {
	return &Error{Kind: Invalid, Fields: []FieldError{{Loc: loc, Msg: msg, Type: typ}}}
}

// Fields collects validation problems so that a request reports all of them at once.
type Fields []FieldError

// Add records one problem.
func (f *Fields) Add(loc []any, msg, typ string) {
	*f = append(*f, FieldError{Loc: loc, Msg: msg, Type: typ})
}

// Err returns an Invalid error carrying every problem, or nil if there are none.
func (f Fields) Err() error {
	if len(f) == 0 {
		return nil
	}
	return &Error{Kind: Invalid, Fields: f}
}

// KindOf returns the kind of the first *Error in err's chain, or Internal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Is reports whether err carries an *Error of kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }

// In returns err with the location of every field error prefixed by part
// ("query" or "body"). Domains report locations relative to their input
// (["name"], ["answers", 2, "choices"]); the HTTP layer, which knows where
// that input came from, calls In where it calls the domain. Errors without
// field errors are returned unchanged.
func In(part string, err error) error {
	return Relocate(err, func(loc []any) []any { return append([]any{part}, loc...) })
}

// Relocate returns err with every field error's location replaced by
// move(location), for inputs taken from more than one part of a request.
// Errors without field errors are returned unchanged.
func Relocate(err error, move func(loc []any) []any) error {
	var e *Error
	if !errors.As(err, &e) || len(e.Fields) == 0 {
		return err
	}
	c := *e
	c.Fields = make([]FieldError, len(e.Fields))
	for i, f := range e.Fields {
		f.Loc = move(f.Loc)
		c.Fields[i] = f
	}
	return &c
}
