package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// encodingJSON is what encoding/json writes for v.
func encodingJSON(t testing.TB, v any) string {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// appended is what encodeJSON writes for v, and whether v wrote itself.
func appended(t testing.TB, v any) (string, bool) {
	_, self := v.(jsonAppender).appendJSON(nil)
	var b bytes.Buffer
	if err := encodeJSON(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String(), self
}

// TestAppendTimestampMatchesLayout: the RFC 3339 fast path writes what
// timestampLayout writes, whatever the zone, fraction or year.
func TestAppendTimestampMatchesLayout(t *testing.T) {
	zone := time.FixedZone("X", -(9*3600 + 30*60))
	for _, at := range []time.Time{
		time.Date(2026, 11, 23, 12, 0, 0, 987654321, time.FixedZone("X", 3600)),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, zone),
		time.Unix(0, 0),
		{},
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(12345, 6, 7, 8, 9, 10, 11, time.UTC),
		time.Date(-44, 3, 15, 12, 0, 0, 0, time.UTC),
	} {
		if got, want := string(appendTimestamp(nil, at)), at.UTC().Format(timestampLayout); got != want {
			t.Errorf("%v: got %s, want %s", at, got, want)
		}
	}
}

func TestModuleListJSONMatchesEncodingJSON(t *testing.T) {
	// A field added to these types must be added to moduleList.appendJSON too.
	if n, m := reflect.TypeFor[moduleResponse]().NumField(), reflect.TypeFor[themeSummary]().NumField(); n != 9 || m != 7 {
		t.Fatalf("moduleResponse has %d fields and themeSummary %d: update moduleList.appendJSON and this test", n, m)
	}
	themes := []themeSummary{
		{ID: 1, Slug: "ls", Title: "Listing files", OrderIndex: 1, EstimatedMinutes: 10, Completed: true},
		{ID: 1 << 40, Slug: "jobs", Title: "Jobs in the shell with &, fg, bg", OrderIndex: -3, ownership: ownership{OwnerID: new(int64(1 << 41)), Published: true}},
		{Title: "zoë <b> \"quoted\" back\\slash \t\u2028 \xff"},
	}
	for _, l := range []moduleList{
		nil,
		{},
		{{}},
		{{ID: 7, Slug: "basics", Title: "Basics", Name: "Basics", Description: "Start here.", OrderIndex: 2,
			Themes: themes, Progress: progressResponse{Completed: 1, Total: 3}, ownership: ownership{OwnerID: new(int64(-5))}}},
		{{Themes: []themeSummary{}}, {ID: 2, Description: "Line one\nline two — with a dash", Themes: themes[1:]}},
	} {
		got, self := appended(t, l)
		if want := encodingJSON(t, []moduleResponse(l)); got != want {
			t.Errorf("%+v:\n got %s\nwant %s", l, got, want)
		}
		if !self {
			t.Errorf("%+v did not write itself", l)
		}
	}
}

// FuzzModuleListJSON checks that the module list writes what encoding/json
// writes, whatever its strings and numbers.
func FuzzModuleListJSON(f *testing.F) {
	f.Add(int64(3), "basics", "Basics & more", "Start <here>.", 2, "ls", 10, true)
	f.Fuzz(func(t *testing.T, id int64, slug, title, description string, order int, themeSlug string, minutes int, done bool) {
		l := moduleList{{ID: id, Slug: slug, Title: title, Name: title, Description: description, OrderIndex: order,
			Themes:   []themeSummary{{ID: -id, Slug: themeSlug, Title: description, OrderIndex: -order, EstimatedMinutes: minutes, Completed: done}},
			Progress: progressResponse{Completed: order, Total: minutes}}}
		if got, _ := appended(t, l); got != encodingJSON(t, []moduleResponse(l)) {
			t.Fatalf("got %s\nwant %s", got, encodingJSON(t, []moduleResponse(l)))
		}
	})
}
