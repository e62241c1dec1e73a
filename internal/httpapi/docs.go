package httpapi

import (
	"encoding/json"
	"html/template"
	"net/http"
	"sort"
	"strings"
)

// docsPage renders the OpenAPI document as one self-contained HTML page: no
// scripts or assets from elsewhere, so it works on a machine without internet.
var docsPage = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} {{.Version}}</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
h2{border-bottom:1px solid #ddd;margin-top:2rem} .op{border:1px solid #ddd;border-radius:6px;margin:1rem 0;padding:.5rem 1rem}
.m{font:bold 13px monospace;padding:2px 6px;border-radius:4px;color:#fff;background:#555} .GET{background:#2b7bb9}.POST{background:#2e8b57}
.PUT{background:#c77c02}.DELETE{background:#b22222} code,pre{background:#f5f5f5;border-radius:4px} pre{padding:.5rem;overflow:auto;font-size:13px}
table{border-collapse:collapse} td,th{border:1px solid #ddd;padding:2px 8px;text-align:left}
</style></head><body>
<h1>{{.Title}} <small>{{.Version}}</small></h1><p>{{.Description}}</p>
<p>Machine-readable: <a href="/api/openapi.json">/api/openapi.json</a> (OpenAPI 3.1).</p>
{{range .Tags}}<h2>{{.Name}}</h2>{{range .Ops}}<div class="op" id="{{.ID}}">
<p><span class="m {{.Method}}">{{.Method}}</span> <code>{{.Path}}</code> {{if .Auth}}🔒{{end}} {{.Summary}}</p>
{{if .Description}}<p>{{.Description}}</p>{{end}}
{{if .Params}}<table><tr><th>parameter</th><th>in</th><th>required</th><th>schema</th></tr>{{range .Params}}<tr><td><code>{{.Name}}</code></td><td>{{.In}}</td><td>{{.Required}}</td><td><code>{{.Schema}}</code></td></tr>{{end}}</table>{{end}}
{{if .Body}}<p>Body: <code>{{.Body}}</code></p>{{end}}
<p>Responses: {{range .Responses}}<code>{{.}}</code> {{end}}</p></div>{{end}}{{end}}
<h2>Schemas</h2>{{range .Schemas}}<h3 id="schema-{{.Name}}">{{.Name}}</h3><pre>{{.JSON}}</pre>{{end}}
</body></html>`))

type docsOp struct {
	ID, Method, Path, Summary, Description, Body string
	Auth                                         bool
	Params                                       []docsParam
	Responses                                    []string
}

type docsParam struct {
	Name, In, Schema string
	Required         bool
}

type docsTag struct {
	Name string
	Ops  []docsOp
}

type docsSchema struct{ Name, JSON string }

func (s *Server) handleDocs(w http.ResponseWriter, r *http.Request) {
	var doc struct {
		Info  struct{ Title, Version, Description string }
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Summary     string
			Description string
			Security    []any
			Parameters  []struct {
				Name, In string
				Required bool
				Schema   any
			}
			RequestBody *struct {
				Content map[string]struct{ Schema map[string]string }
			} `json:"requestBody"`
			Responses map[string]any
			Tags      []string
		}
		Components struct{ Schemas map[string]any }
	}
	if err := json.Unmarshal(s.openapi, &doc); err != nil {
		s.writeError(w, r, err)
		return
	}
	tags := map[string]*docsTag{}
	for path, methods := range doc.Paths {
		for method, o := range methods {
			d := docsOp{ID: o.OperationID, Method: strings.ToUpper(method), Path: path, Summary: o.Summary,
				Description: o.Description, Auth: len(o.Security) > 0}
			for _, p := range o.Parameters {
				b, _ := json.Marshal(p.Schema)
				d.Params = append(d.Params, docsParam{Name: p.Name, In: p.In, Required: p.Required, Schema: string(b)})
			}
			if o.RequestBody != nil {
				d.Body = strings.TrimPrefix(o.RequestBody.Content["application/json"].Schema["$ref"], "#/components/schemas/")
			}
			for code := range o.Responses {
				d.Responses = append(d.Responses, code)
			}
			sort.Strings(d.Responses)
			tag := o.Tags[0]
			if tags[tag] == nil {
				tags[tag] = &docsTag{Name: tag}
			}
			tags[tag].Ops = append(tags[tag].Ops, d)
		}
	}
	data := struct {
		Title, Version, Description string
		Tags                        []docsTag
		Schemas                     []docsSchema
	}{Title: doc.Info.Title, Version: doc.Info.Version, Description: doc.Info.Description}
	for _, t := range tags {
		sort.Slice(t.Ops, func(i, j int) bool { return t.Ops[i].Path+t.Ops[i].Method < t.Ops[j].Path+t.Ops[j].Method })
		data.Tags = append(data.Tags, *t)
	}
	sort.Slice(data.Tags, func(i, j int) bool { return data.Tags[i].Name < data.Tags[j].Name })
	for name, sc := range doc.Components.Schemas {
		b, _ := json.MarshalIndent(sc, "", "  ")
		data.Schemas = append(data.Schemas, docsSchema{Name: name, JSON: string(b)})
	}
	sort.Slice(data.Schemas, func(i, j int) bool { return data.Schemas[i].Name < data.Schemas[j].Name })
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := docsPage.Execute(w, data); err != nil {
		s.log.ErrorContext(r.Context(), "render docs", "error", err.Error())
	}
}
