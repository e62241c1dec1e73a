package lesson

import (
	"slices"
	"testing"
	"time"
)

func TestProgressOf(t *testing.T) {
	m := &Module{ID: 1, Themes: []*Theme{{ID: 10}, {ID: 11}, {ID: 12}}}
	at := time.Unix(100, 0)
	tests := []struct {
		name string
		done map[int64]time.Time
		want []bool
		n    int
	}{
		{"nothing done", nil, []bool{false, false, false}, 0},
		{"some done", map[int64]time.Time{10: at, 12: at}, []bool{true, false, true}, 2},
		{"another module's theme does not count", map[int64]time.Time{99: at, 11: at}, []bool{false, true, false}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ProgressOf(m, tt.done)
			if !slices.Equal(p.Done, tt.want) || p.Progress != (Progress{Completed: tt.n, Total: 3}) || p.Module != m {
				t.Errorf("ProgressOf = %v %+v; want %v and %d of 3", p.Done, p.Progress, tt.want, tt.n)
			}
		})
	}
}
