// Package actor defines who calls a domain method: one user with one role.
//
// It sits at the level of internal/errs (it imports nothing of tuxlab but
// errs) so that every domain, auth included, can take an Actor without an
// import cycle. auth.Role is an
// alias of Role, so the two names are the same type.
package actor

import "tuxlab/internal/errs"

// ErrAuthorRequired answers an authoring call by an actor whose role may not
// author content. Its text is the HTTP author gate's, which runs first.
var ErrAuthorRequired = errs.E(errs.Forbidden, "Instructor or admin access required")

// ErrNotOwner answers a change to content the actor does not own.
var ErrNotOwner = errs.E(errs.Forbidden, "This content belongs to another author: only its owner or an admin may change it")

// Role is what a user may do.
type Role string

// The roles of the contract, lowest privilege first.
const (
	Student    Role = "student"
	Instructor Role = "instructor"
	Admin      Role = "admin"
)

// Actor is the caller of a domain method: a user and that user's role.
// The zero Actor is an anonymous student with no user.
type Actor struct {
	UserID int64
	Role   Role
}

// IsAdmin reports whether the actor is an admin, who sees and changes everything.
func (a Actor) IsAdmin() bool { return a.Role == Admin }

// CanAuthor reports whether the actor may create course content (modules,
// themes, labs, exams): instructors and admins. Which items an author may
// change is CanChange's rule.
func (a Actor) CanAuthor() bool { return a.Role == Admin || a.Role == Instructor }

// MayAuthor returns ErrAuthorRequired unless the actor may author content.
// Every authoring method of lesson, lab and exam calls it first.
func (a Actor) MayAuthor() error {
	if !a.CanAuthor() {
		return ErrAuthorRequired
	}
	return nil
}

// CanChange reports whether the actor may change, delete or see the draft
// of content owned by owner (nil: the system's content, which only admins
// change): an admin always, an instructor only their own.
func (a Actor) CanChange(owner *int64) bool {
	if a.IsAdmin() {
		return true
	}
	return a.CanAuthor() && owner != nil && a.UserID != 0 && *owner == a.UserID
}

// MayChange returns ErrAuthorRequired unless the actor may author, and
// ErrNotOwner unless it may change content owned by owner.
func (a Actor) MayChange(owner *int64) error {
	if err := a.MayAuthor(); err != nil {
		return err
	}
	if !a.CanChange(owner) {
		return ErrNotOwner
	}
	return nil
}

// OwnerID is the owner content the actor creates records: its user, or nil
// for the service acting on its own behalf.
func (a Actor) OwnerID() *int64 {
	if a.UserID == 0 {
		return nil
	}
	id := a.UserID
	return &id
}

// PublishesByDefault reports whether content the actor creates starts
// published: an admin's does, an instructor's starts as a draft.
func (a Actor) PublishesByDefault() bool { return a.IsAdmin() }

// Owns reports whether the actor may act on an object owned by userID: its
// owner, or an admin.
func (a Actor) Owns(userID int64) bool { return a.UserID == userID || a.IsAdmin() }

// AsAdmin returns an admin actor with no user, for work the service does on
// its own behalf (cleanup, imports at start-up, tests).
func AsAdmin() Actor { return Actor{Role: Admin} }

// User returns a student actor for userID: the owner's view of its own
// objects, with no admin reach.
func User(userID int64) Actor { return Actor{UserID: userID, Role: Student} }
