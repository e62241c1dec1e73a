package errs_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"tuxlab/internal/errs"
)

func TestInPrefixesFieldLocations(t *testing.T) {
	var f errs.Fields
	f.Add([]any{"name"}, "Field required", "missing")
	f.Add([]any{"answers", 2, "choices"}, "Too many", "value_error")
	plain := errs.E(errs.NotFound, "No such lab")
	tests := []struct {
		name string
		err  error
		part string
		want [][]any // nil: err comes back unchanged
	}{
		{"fields in the query", f.Err(), "query", [][]any{{"query", "name"}, {"query", "answers", 2, "choices"}}},
		{"fields in the body", f.Err(), "body", [][]any{{"body", "name"}, {"body", "answers", 2, "choices"}}},
		{"wrapped", fmt.Errorf("create: %w", errs.Field([]any{"slug"}, "Taken", "value_error")), "query", [][]any{{"query", "slug"}}},
		{"no fields", plain, "query", nil},
		{"not an errs.Error", errors.New("boom"), "query", nil},
		{"nil", nil, "query", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errs.In(tt.part, tt.err)
			if tt.want == nil {
				if got != tt.err {
					t.Fatalf("got %v, want the error unchanged", got)
				}
				return
			}
			var e *errs.Error
			if !errors.As(got, &e) || e.Kind != errs.Invalid {
				t.Fatalf("got %v, want an Invalid *errs.Error", got)
			}
			var locs [][]any
			for _, fe := range e.Fields {
				locs = append(locs, fe.Loc)
			}
			if !reflect.DeepEqual(locs, tt.want) {
				t.Errorf("locs %v, want %v", locs, tt.want)
			}
		})
	}
	// The domain's own error is not changed: a second caller sees the relative locations.
	err := f.Err()
	_ = errs.In("query", err)
	var e *errs.Error
	errors.As(err, &e)
	if !reflect.DeepEqual(e.Fields[0].Loc, []any{"name"}) {
		t.Errorf("original changed: %v", e.Fields[0].Loc)
	}
}
