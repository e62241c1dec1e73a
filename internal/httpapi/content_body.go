package httpapi

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"

	"tuxlab/internal/errs"
	"tuxlab/internal/yamlfile"
)

// yamlTypes are the media types an admin may send a YAML body as.
var yamlTypes = []string{"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"}

// decodeContentBody reads an admin's body of questions or tasks as JSON or,
// by its Content-Type, YAML. An empty body leaves dst as it is.
func decodeContentBody(r *http.Request, dst any) (given bool, err error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if !slices.Contains(yamlTypes, mt) {
		if r.ContentLength == 0 {
			return false, nil
		}
		body, err := io.ReadAll(r.Body)
		if isTooLarge(err) {
			return false, errBodyTooLarge
		}
		if len(bytes.TrimSpace(body)) == 0 {
			return false, nil
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		return true, decodeJSON(r, dst)
	}
	body, err := io.ReadAll(r.Body)
	if isTooLarge(err) {
		return false, errBodyTooLarge
	}
	if err != nil {
		return false, errs.Field([]any{"body"}, "Could not read the request body", "body_read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return false, nil
	}
	if err := yamlfile.Decode(body, dst); err != nil {
		return false, errs.Field([]any{"body"}, "YAML decode error: "+err.Error(), "yaml_invalid")
	}
	return true, nil
}

// locate places a domain's validation problems in the request: fields named
// in query came as query parameters, the others in the body.
func locate(err error, query ...string) error {
	return relocate(err, func(loc []any) []any {
		part := "body"
		if name, ok := loc[0].(string); ok && slices.Contains(query, name) {
			part = "query"
		}
		return append([]any{part}, loc...)
	})
}

// inBody moves validation problems that rules written for the query string
// place there to the body, for routes that take the same input either way.
func inBody(err error) error {
	return relocate(err, func(loc []any) []any {
		if loc[0] == "query" {
			return append([]any{"body"}, loc[1:]...)
		}
		return loc
	})
}

// relocate rewrites the location of every validation problem in err.
func relocate(err error, move func(loc []any) []any) error {
	var e *errs.Error
	if !errors.As(err, &e) || len(e.Fields) == 0 {
		return err
	}
	out := *e
	out.Fields = make([]errs.FieldError, len(e.Fields))
	for i, f := range e.Fields {
		if len(f.Loc) > 0 {
			f.Loc = move(f.Loc)
		}
		out.Fields[i] = f
	}
	return &out
}
