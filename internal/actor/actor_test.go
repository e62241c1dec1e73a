package actor_test

import (
	"testing"

	"tuxlab/internal/actor"
	"tuxlab/internal/errs"
)

func TestActorRules(t *testing.T) {
	tests := []struct {
		name        string
		a           actor.Actor
		admin       bool
		author      bool
		owns7       bool
		ownsOther   bool
		forbiddenTo bool // MayAuthor answers Forbidden
	}{
		{"student owner", actor.Actor{UserID: 7, Role: actor.Student}, false, false, true, false, true},
		{"instructor", actor.Actor{UserID: 8, Role: actor.Instructor}, false, true, false, false, false},
		{"admin", actor.Actor{UserID: 9, Role: actor.Admin}, true, true, true, true, false},
		{"service as admin", actor.AsAdmin(), true, true, true, true, false},
		{"User helper", actor.User(7), false, false, true, false, true},
		{"zero actor", actor.Actor{}, false, false, false, false, true},
		{"instructor owner", actor.Actor{UserID: 7, Role: actor.Instructor}, false, true, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.IsAdmin(); got != tt.admin {
				t.Errorf("IsAdmin = %v", got)
			}
			if got := tt.a.CanAuthor(); got != tt.author {
				t.Errorf("CanAuthor = %v", got)
			}
			if got := tt.a.Owns(7); got != tt.owns7 {
				t.Errorf("Owns(7) = %v", got)
			}
			if got := tt.a.Owns(1000); got != tt.ownsOther {
				t.Errorf("Owns(1000) = %v", got)
			}
			if got := errs.Is(tt.a.MayAuthor(), errs.Forbidden); got != tt.forbiddenTo {
				t.Errorf("MayAuthor forbidden = %v", got)
			}
			seven := int64(7)
			if got := tt.a.CanChange(&seven); got != (tt.admin || (tt.author && tt.a.UserID == 7)) {
				t.Errorf("CanChange(7) = %v", got)
			}
			if got := tt.a.CanChange(nil); got != tt.admin {
				t.Errorf("CanChange(system) = %v", got)
			}
		})
	}
}
