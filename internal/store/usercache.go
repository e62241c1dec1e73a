package store

import (
	"sync"
	"time"

	"tuxlab/internal/auth"
)

// UserCacheTTL is how long FindUserForRequest reuses a user row it read. It
// bounds how stale a row can be only where nothing else drops it: a change
// made by another process on the same SQLite file. Changes made through this
// store drop the row before the write returns, and on PostgreSQL every
// process drops it when the change commits (see listenUsers).
const UserCacheTTL = 2 * time.Second

// maxCachedUsers bounds the cache's memory: past it, stale rows are swept,
// and if that is not enough the cache starts again empty.
const maxCachedUsers = 100_000

// userCache keeps the user rows the per-request identity check read lately.
//
// A read that raced with a write must not store the row it read before the
// write committed. Every drop therefore moves gen on, and a read stores its
// row only if gen has not moved since before it queried the database: a
// drop that ran after the commit (the only place drops run) also ran after
// such a read began.
type userCache struct {
	mu      sync.Mutex
	gen     uint64
	enabled bool // off while a PostgreSQL store is not listening for changes
	rows    map[int64]cachedUser
}

type cachedUser struct {
	u    auth.User
	read time.Time // when the query that read it began
}

func newUserCache(enabled bool) *userCache {
	return &userCache{enabled: enabled, rows: map[int64]cachedUser{}}
}

// get returns a copy of user id if a fresh one is cached, and the generation
// to hand to put after reading the database otherwise.
func (c *userCache) get(id int64, now time.Time) (*auth.User, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.rows[id]
	if ok && fresh(e.read, now) {
		return clone(&e.u), c.gen
	}
	return nil, c.gen
}

// clone copies u, so that neither the cache nor its callers see the other's edits.
func clone(u *auth.User) *auth.User {
	c := *u
	if u.TokensRevokedAt != nil {
		at := *u.TokensRevokedAt
		c.TokensRevokedAt = &at
	}
	return &c
}

func fresh(read, now time.Time) bool {
	age := now.Sub(read)
	return age >= 0 && age < UserCacheTTL
}

// put caches u, read by a query that began at read, unless something was
// dropped since get returned gen.
func (c *userCache) put(u *auth.User, gen uint64, read time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.enabled || c.gen != gen {
		return
	}
	if len(c.rows) >= maxCachedUsers {
		for id, e := range c.rows {
			if !fresh(e.read, read) {
				delete(c.rows, id)
			}
		}
		if len(c.rows) >= maxCachedUsers {
			clear(c.rows)
		}
	}
	c.rows[u.ID] = cachedUser{u: *clone(u), read: read}
}

// drop forgets user id; it runs after a change to the user's row has ended.
func (c *userCache) drop(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.rows, id)
}

// setEnabled empties the cache and turns it on or off: off while changes
// made by other processes could go unseen.
func (c *userCache) setEnabled(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.enabled = on
	clear(c.rows)
}
