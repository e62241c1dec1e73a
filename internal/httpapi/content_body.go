package httpapi

import (
	"bytes"
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
	return errs.Relocate(err, func(loc []any) []any {
		part := "body"
		if name, ok := first(loc).(string); ok && slices.Contains(query, name) {
			part = "query"
		}
		return append([]any{part}, loc...)
	})
}

// first is loc's first element, or nil for an empty location.
func first(loc []any) any {
	if len(loc) == 0 {
		return nil
	}
	return loc[0]
}

// onePublished is the published state a request gives, as the query
// parameter or the body's field: both may be sent only when they agree.
func onePublished(query, body *bool) (*bool, error) {
	if query != nil && body != nil && *query != *body {
		return nil, errs.Field([]any{"body", "published"}, "published differs from the query parameter of the same name: send one", "value_error")
	}
	if query != nil {
		return query, nil
	}
	return body, nil
}
