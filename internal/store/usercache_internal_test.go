package store

import (
	"testing"
	"time"

	"tuxlab/internal/auth"
)

func TestUserCacheKeepsNoRowReadBeforeADrop(t *testing.T) {
	c := newUserCache(true)
	now := time.Now()
	old := &auth.User{ID: 1, Role: auth.RoleStudent}

	// A read begins, a change commits and drops the user, the read ends:
	// what it read may predate the change, so it is not kept.
	_, gen := c.get(1, now)
	c.drop(1)
	c.put(old, gen, now)
	if u, _ := c.get(1, now); u != nil {
		t.Fatalf("a row read before a drop was cached: %+v", u)
	}

	// A read that began after the drop is kept, as a copy.
	_, gen = c.get(1, now)
	c.put(old, gen, now)
	u, _ := c.get(1, now)
	if u == nil || u.Role != auth.RoleStudent {
		t.Fatalf("cached %+v", u)
	}
	u.Role = auth.RoleAdmin
	if again, _ := c.get(1, now); again.Role != auth.RoleStudent {
		t.Fatal("a caller's edit reached the cache")
	}
}

func TestUserCacheAges(t *testing.T) {
	c := newUserCache(true)
	now := time.Now()
	_, gen := c.get(1, now)
	c.put(&auth.User{ID: 1}, gen, now)
	if u, _ := c.get(1, now.Add(UserCacheTTL-time.Nanosecond)); u == nil {
		t.Fatal("dropped before the TTL")
	}
	if u, _ := c.get(1, now.Add(UserCacheTTL)); u != nil {
		t.Fatal("kept for the TTL or longer")
	}
	if u, _ := c.get(1, now.Add(-time.Second)); u != nil {
		t.Fatal("a clock gone backwards kept the row")
	}
}

func TestUserCacheOff(t *testing.T) {
	c := newUserCache(false)
	now := time.Now()
	_, gen := c.get(1, now)
	c.put(&auth.User{ID: 1}, gen, now)
	if u, _ := c.get(1, now); u != nil {
		t.Fatal("a cache that is off kept a row")
	}

	// Turned on, then a read, then off again (the listener lost its
	// connection): the row is gone, and a read that began before is not kept.
	c.setEnabled(true)
	_, gen = c.get(1, now)
	c.put(&auth.User{ID: 1}, gen, now)
	_, gen = c.get(2, now)
	c.setEnabled(false)
	c.setEnabled(true)
	c.put(&auth.User{ID: 2}, gen, now)
	if u, _ := c.get(1, now); u != nil {
		t.Fatal("a row survived the cache going off")
	}
	if u, _ := c.get(2, now); u != nil {
		t.Fatal("a read that began before the cache went off was kept")
	}
}

func TestUserCacheStaysBounded(t *testing.T) {
	c := newUserCache(true)
	now := time.Now()
	for id := range int64(maxCachedUsers + 10) {
		_, gen := c.get(id, now)
		c.put(&auth.User{ID: id}, gen, now)
	}
	if n := len(c.rows); n > maxCachedUsers {
		t.Fatalf("%d rows cached, more than %d", n, maxCachedUsers)
	}
}
