package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"tuxlab/internal/errs"
)

// writeJSON encodes v fully before writing, so an encoding error never leaves
// half a body behind.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer putJSONBuffer(buf)
	if err := encodeJSON(buf, v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"detail":"` + internalDetail + `"}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if buf.Len() > smallBody {
		h["Content-Length"] = []string{strconv.Itoa(buf.Len())}
	}
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// smallBody is the size up to which net/http holds a whole response before
// writing it (its bufferBeforeChunkingSize), and so sets Content-Length
// itself, without the allocations of setting it here. A larger body would
// otherwise be sent chunked.
const smallBody = 2048

// encodeJSON writes v and a newline to buf, as a json.Encoder does. A
// jsonAppender writes itself when it can.
func encodeJSON(buf *bytes.Buffer, v any) error {
	if a, ok := v.(jsonAppender); ok {
		if b, ok := a.appendJSON(buf.AvailableBuffer()); ok {
			buf.Write(append(b, '\n'))
			return nil
		}
	}
	return json.NewEncoder(buf).Encode(v)
}

// jsonAppender is a response written on every request that writes its own
// JSON, byte for byte as encoding/json would, when its strings need no
// escaping (see plainJSON); otherwise it reports false and encoding/json
// writes it. Each has a test comparing the two.
type jsonAppender interface {
	appendJSON(b []byte) ([]byte, bool)
}

// plainJSON reports whether encoding/json writes s between quotes as it is:
// printable ASCII without a quote, a backslash, or <, > and & (which it
// escapes for HTML).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// appendJSONString appends s as encoding/json writes a string: as it is when
// plainJSON, through encoding/json itself otherwise (escapes, HTML characters,
// invalid UTF-8), which is rare in what tuxlab writes this way.
func appendJSONString(b []byte, s string) []byte {
	if plainJSON(s) {
		return appendPlainJSON(b, s)
	}
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// appendPlainJSON appends "s"; the caller has checked plainJSON(s).
func appendPlainJSON(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// jsonBuffers keeps response buffers between requests: a body grown from
// nothing reallocates a few times on its way to its size.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putJSONBuffer returns buf to the pool, unless one large body made it too
// big to keep.
func putJSONBuffer(buf *bytes.Buffer) {
	if buf.Cap() > 256<<10 {
		return
	}
	buf.Reset()
	jsonBuffers.Put(buf)
}

// decodeJSON reads a JSON object body into dst. The request must say it is
// JSON (see requireJSON: 415 otherwise). Unknown fields are ignored;
// malformed JSON and wrongly typed fields are 422 with their location; a body
// over the limit is 413.
func decodeJSON(r *http.Request, dst any) error {
	if err := requireJSON(r); err != nil {
		return err
	}
	body, err := io.ReadAll(r.Body)
	if isTooLarge(err) {
		return errBodyTooLarge
	}
	if err != nil {
		return errs.Field([]any{"body"}, "Could not read the request body", "body_read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return errs.Field([]any{"body"}, "Field required: send a JSON object", "missing")
	}
	err = json.Unmarshal(body, dst)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typeErr) && typeErr.Field != "":
		loc := []any{"body"}
		for _, part := range strings.Split(typeErr.Field, ".") {
			loc = append(loc, part)
		}
		return errs.Field(loc, fmt.Sprintf("Input should be a valid %s", jsonTypeName(typeErr.Type.Kind().String())), "type_error")
	case errors.As(err, &typeErr):
		return errs.Field([]any{"body"}, "Input should be a JSON object", "model_type")
	default:
		return errs.Field([]any{"body"}, "JSON decode error: "+err.Error(), "json_invalid")
	}
}

// requireJSON refuses, with 415, a request whose Content-Type is not JSON:
// application/json or a structured application/...+json type (RFC 6839),
// with parameters allowed, though a charset must be utf-8 (RFC 8259). A
// missing Content-Type is refused too: a browser sends a cross-site POST
// without a preflight only as text/plain, form-urlencoded or multipart, so a
// page on another site cannot make a JSON route act (register an account,
// say) with a body it labels otherwise.
func requireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case ct == "":
		return errNotJSON
	case err != nil || !isJSONType(mt):
		return errs.Errorf(errs.UnsupportedType, "Unsupported media type %q: send the body as JSON with Content-Type: application/json", mediaTypeOf(ct))
	case params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8"):
		return errs.Errorf(errs.UnsupportedType, "Unsupported charset %q: JSON bodies are UTF-8", params["charset"])
	}
	return nil
}

var errNotJSON = errs.E(errs.UnsupportedType, "Content-Type required: send the body as JSON with Content-Type: application/json")

// isJSONType reports whether the media type mt (lower case, without
// parameters) is JSON: application/json or application/<anything>+json.
func isJSONType(mt string) bool {
	sub, ok := strings.CutPrefix(mt, "application/")
	return ok && (sub == "json" || len(sub) > len("+json") && strings.HasSuffix(sub, "+json"))
}

// mediaTypeOf returns the media type of a Content-Type header without its
// parameters, cut short so that a detail never echoes much of a header.
func mediaTypeOf(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(mt)
	if len(mt) > 64 {
		mt = mt[:64] + "..."
	}
	return mt
}

// isTooLarge reports whether a body read failed on the size limit.
func isTooLarge(err error) bool {
	var tooBig *http.MaxBytesError
	return errors.As(err, &tooBig)
}

func jsonTypeName(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "integer"
	case strings.HasPrefix(kind, "float"):
		return "number"
	case kind == "bool":
		return "boolean"
	case kind == "slice", kind == "array":
		return "array"
	case kind == "map", kind == "struct":
		return "object"
	}
	return kind
}

// requireField adds a "missing" problem when a required body field is absent.
func requireField[T any](f *errs.Fields, name string, v *T) {
	if v == nil {
		f.Add([]any{"body", name}, "Field required", "missing")
	}
}

// pathID reads an integer path value; anything else is a 422 at ["path", name].
func pathID(r *http.Request, name string) (int64, error) {
	v := r.PathValue(name)
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return 0, errs.Field([]any{"path", name}, "Input should be a valid positive integer", "int_parsing")
	}
	return id, nil
}

// query reads typed query parameters and collects every problem.
type query struct {
	v      url.Values
	fields errs.Fields
}

func newQuery(r *http.Request) *query { return &query{v: r.URL.Query()} }

// str returns a string parameter and whether it was given.
func (q *query) str(name string) (string, bool) {
	if !q.v.Has(name) {
		return "", false
	}
	return q.v.Get(name), true
}

// requireStr returns a required string parameter.
func (q *query) requireStr(name string) string {
	v, ok := q.str(name)
	if !ok {
		q.fields.Add([]any{"query", name}, "Field required", "missing")
	}
	return v
}

// int returns an integer parameter in [lo, hi], def when absent.
func (q *query) int(name string, def, lo, hi int) int {
	v, ok := q.str(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		q.fields.Add([]any{"query", name}, "Input should be a valid integer", "int_parsing")
		return def
	}
	if n < lo || n > hi {
		q.fields.Add([]any{"query", name}, fmt.Sprintf("Input should be between %d and %d", lo, hi), "range")
		return def
	}
	return n
}

// optStr returns a string parameter, or nil when absent.
func (q *query) optStr(name string) *string {
	if v, ok := q.str(name); ok {
		return &v
	}
	return nil
}

// optInt returns an integer parameter in [lo, hi], or nil when absent.
func (q *query) optInt(name string, lo, hi int) *int {
	if _, ok := q.str(name); !ok {
		return nil
	}
	before := len(q.fields)
	n := q.int(name, 0, lo, hi)
	if len(q.fields) > before {
		return nil
	}
	return &n
}

// optInts returns a comma-separated list of at most max integers, each in
// [lo, hi], or nil when absent; an empty value is an empty list.
func (q *query) optInts(name string, max, lo, hi int) *[]int {
	v, ok := q.str(name)
	if !ok {
		return nil
	}
	out := []int{}
	if strings.TrimSpace(v) == "" {
		return &out
	}
	parts := strings.Split(v, ",")
	if len(parts) > max {
		q.fields.Add([]any{"query", name}, fmt.Sprintf("At most %d values", max), "too_long")
		return nil
	}
	for _, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < lo || n > hi {
			q.fields.Add([]any{"query", name}, fmt.Sprintf("Input should be a comma-separated list of integers between %d and %d", lo, hi), "value_error")
			return nil
		}
		out = append(out, n)
	}
	return &out
}

// requireInt returns a required integer parameter in [lo, hi].
func (q *query) requireInt(name string, lo, hi int) int {
	if _, ok := q.str(name); !ok {
		q.fields.Add([]any{"query", name}, "Field required", "missing")
		return 0
	}
	return q.int(name, 0, lo, hi)
}

// maxIDs bounds the length of an id list a client may send.
const maxIDs = 1000

// ids returns a required comma-separated list of positive integers.
func (q *query) ids(name string) []int64 {
	v := q.requireStr(name)
	if v == "" {
		if _, given := q.str(name); given {
			q.fields.Add([]any{"query", name}, "Input should be a comma-separated list of ids", "value_error")
		}
		return nil
	}
	parts := strings.Split(v, ",")
	if len(parts) > maxIDs {
		q.fields.Add([]any{"query", name}, fmt.Sprintf("At most %d ids", maxIDs), "too_long")
		return nil
	}
	out := make([]int64, 0, len(parts))
	for _, p := range parts {
		id, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || id < 1 {
			q.fields.Add([]any{"query", name}, "Input should be a comma-separated list of ids", "value_error")
			return nil
		}
		out = append(out, id)
	}
	return out
}

// optBool returns a boolean parameter, or nil when absent.
func (q *query) optBool(name string) *bool {
	if _, ok := q.str(name); !ok {
		return nil
	}
	v := q.boolean(name)
	return &v
}

// boolean returns a required boolean parameter.
func (q *query) boolean(name string) bool {
	v, ok := q.str(name)
	if !ok {
		q.fields.Add([]any{"query", name}, "Field required", "missing")
		return false
	}
	switch strings.ToLower(v) {
	case "true", "1", "yes", "on":
		return true
	case "false", "0", "no", "off":
		return false
	}
	q.fields.Add([]any{"query", name}, "Input should be a valid boolean", "bool_parsing")
	return false
}

// err returns every problem found, or nil.
func (q *query) err() error { return q.fields.Err() }

// timestamp formats times as the contract's UTC YYYY-MM-DDTHH:MM:SSZ.
type timestamp time.Time

// MarshalText implements encoding.TextMarshaler, which encoding/json
// quotes; a MarshalJSON result would be parsed again to check it.
func (t timestamp) MarshalText() ([]byte, error) {
	return appendTimestamp(make([]byte, 0, len(timestampLayout)), time.Time(t)), nil
}

const timestampLayout = "2006-01-02T15:04:05Z"

// appendTimestamp appends t in timestampLayout. In UTC, time.RFC3339 writes
// the same bytes through the time package's own fast path, where
// timestampLayout goes through its general layout parser (a tenth of
// GET /api/auth/me's handling).
func appendTimestamp(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, time.RFC3339)
}

// optID returns an id parameter, or nil when absent; 0 clears a reference.
func (q *query) optID(name string) *int64 {
	n := q.optInt(name, 0, 1<<62)
	if n == nil {
		return nil
	}
	id := int64(*n)
	return &id
}
