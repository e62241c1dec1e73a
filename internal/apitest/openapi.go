package apitest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validator checks responses against an OpenAPI 3.1 document.
type Validator struct {
	ops      []operation
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	schemas  map[string]*jsonschema.Schema
}

type operation struct {
	method, path string
	re           *regexp.Regexp
	responses    map[string]responseSpec
}

type responseSpec struct {
	schemaRef string   // JSON pointer into the document, "" for no body
	headers   []string // the headers the document marks required
}

var (
	validatorsMu sync.Mutex
	validators   = map[string]*Validator{}
	coverageMu   sync.Mutex
	coverage     = map[string]map[string]bool{} // "METHOD /path" → statuses seen
)

// NewValidator compiles doc once per distinct document.
func NewValidator(doc []byte) (*Validator, error) {
	validatorsMu.Lock()
	defer validatorsMu.Unlock()
	if v, ok := validators[string(doc)]; ok {
		return v, nil
	}
	var parsed struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Headers map[string]struct {
					Required bool
				}
				Content map[string]struct {
					Schema struct {
						Ref string `json:"$ref"`
					}
				}
			}
		}
	}
	if err := json.Unmarshal(doc, &parsed); err != nil {
		return nil, err
	}
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("https://tuxlab.invalid/openapi.json", raw); err != nil {
		return nil, err
	}
	v := &Validator{compiler: c, schemas: map[string]*jsonschema.Schema{}}
	for path, methods := range parsed.Paths {
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(path), `[^/]+`) + "$")
		for method, o := range methods {
			op := operation{method: strings.ToUpper(method), path: path, re: re, responses: map[string]responseSpec{}}
			for code, r := range o.Responses {
				spec := responseSpec{}
				if ct, ok := r.Content["application/json"]; ok {
					spec.schemaRef = ct.Schema.Ref
				}
				for h, hd := range r.Headers {
					if hd.Required { // an optional header (Retry-After of a 503) may be absent
						spec.headers = append(spec.headers, h)
					}
				}
				op.responses[code] = spec
			}
			v.ops = append(v.ops, op)
			key := op.method + " " + path
			coverageMu.Lock()
			if coverage[key] == nil {
				coverage[key] = map[string]bool{}
			}
			coverageMu.Unlock()
		}
	}
	// Literal segments beat parameters: try the most specific template first.
	sort.Slice(v.ops, func(i, j int) bool { return strings.Count(v.ops[i].path, "{") < strings.Count(v.ops[j].path, "{") })
	validators[string(doc)] = v
	return v, nil
}

func (v *Validator) schema(ref string) (*jsonschema.Schema, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.schemas[ref]; ok {
		return s, nil
	}
	s, err := v.compiler.Compile("https://tuxlab.invalid/openapi.json" + ref)
	if err != nil {
		return nil, err
	}
	v.schemas[ref] = s
	return s, nil
}

// Check validates one response; it returns nil for paths the document does not cover.
func (v *Validator) Check(method, path string, status int, header http.Header, body []byte) error {
	if method == http.MethodHead {
		return nil
	}
	var op *operation
	for i := range v.ops {
		if v.ops[i].method == method && v.ops[i].re.MatchString(path) {
			op = &v.ops[i]
			break
		}
	}
	if op == nil {
		return nil
	}
	code := fmt.Sprint(status)
	coverageMu.Lock()
	coverage[op.method+" "+op.path][code] = true
	coverageMu.Unlock()
	spec, ok := op.responses[code]
	if !ok {
		return fmt.Errorf("%s %s answered %d, which the document does not list for %s", method, path, status, op.path)
	}
	for _, h := range spec.headers {
		if header.Get(h) == "" {
			return fmt.Errorf("%s %s: documented header %s missing", method, path, h)
		}
	}
	if spec.schemaRef == "" {
		return nil
	}
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("%s %s: content type %q, want application/json", method, path, ct)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s: body is not JSON: %v", method, path, err)
	}
	s, err := v.schema(spec.schemaRef)
	if err != nil {
		return fmt.Errorf("compile %s: %v", spec.schemaRef, err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("%s %s %d: body does not match %s: %v\nbody: %s", method, path, status, spec.schemaRef, err, body)
	}
	return nil
}

// Validating wraps h so that every response it writes is checked against doc;
// a mismatch fails t.
func Validating(t testing.TB, h http.Handler, doc []byte) http.Handler {
	v, err := NewValidator(doc)
	if err != nil {
		t.Fatalf("openapi document: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			// A WebSocket: pass through, but record the answer, 101 once hijacked.
			tw := &teeWriter{ResponseWriter: w}
			h.ServeHTTP(tw, r)
			if err := v.Check(r.Method, r.URL.Path, tw.status, w.Header(), tw.body.Bytes()); err != nil {
				t.Errorf("openapi: %v", err)
			}
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if r.Context().Err() != nil && rec.Body.Len() == 0 {
			return // the client went away and the handler wrote nothing: nobody reads it
		}
		if err := v.Check(r.Method, r.URL.Path, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
			t.Errorf("openapi: %v", err)
		}
		keep(r, rec.Code, rec.Body.Bytes())
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

// Uncovered lists documented operations whose success status no test produced.
func Uncovered() []string {
	coverageMu.Lock()
	defer coverageMu.Unlock()
	var out []string
	for key, seen := range coverage {
		ok := false
		for code := range seen {
			if strings.HasPrefix(code, "2") || code == "101" {
				ok = true
			}
		}
		if !ok {
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return out
}

// teeWriter passes a response through while keeping its status and body, and
// lets the handler hijack the connection for a WebSocket.
type teeWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *teeWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *teeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return http.NewResponseController(w.ResponseWriter).Hijack()
}
