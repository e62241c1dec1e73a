package terminal

import (
	"crypto/rand"
	"encoding/base64"
)

// newSessionID returns a random 128-bit id, URL-safe: a session's only
// credential besides its owner's token, so it cannot be guessed.
func newSessionID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// registry knows the sessions of a Bridge by id and by user. The Bridge
// guards it.
type registry struct {
	byID   map[string]*term
	byUser map[int64]map[*term]bool
}

func newRegistry() *registry {
	return &registry{byID: map[string]*term{}, byUser: map[int64]map[*term]bool{}}
}

func (r *registry) add(t *term) {
	r.byID[t.id] = t
	if r.byUser[t.userID] == nil {
		r.byUser[t.userID] = map[*term]bool{}
	}
	r.byUser[t.userID][t] = true
}

func (r *registry) remove(t *term) {
	if r.byID[t.id] == t {
		delete(r.byID, t.id)
	}
	if delete(r.byUser[t.userID], t); len(r.byUser[t.userID]) == 0 {
		delete(r.byUser, t.userID)
	}
}

// lookup finds session id when it is userID's on sandbox sandboxID; any
// other session, another user's or on another sandbox, is unknown.
func (r *registry) lookup(id string, userID, sandboxID int64) *term {
	t := r.byID[id]
	if t == nil || t.userID != userID || t.sandboxID != sandboxID {
		return nil
	}
	return t
}

// user is every session of userID.
func (r *registry) user(userID int64) []*term {
	out := make([]*term, 0, len(r.byUser[userID]))
	for t := range r.byUser[userID] {
		out = append(out, t)
	}
	return out
}

// all is every session.
func (r *registry) all() []*term {
	out := make([]*term, 0, len(r.byID))
	for _, ts := range r.byUser {
		for t := range ts {
			out = append(out, t)
		}
	}
	return out
}
