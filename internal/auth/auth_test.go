package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tuxlab/internal/errs"
)

func TestNormalizeEmail(t *testing.T) {
	tests := []struct {
		in, want string // want "" means invalid
	}{
		{"Alice@TuxLab.org", "alice@tuxlab.org"},
		{"first.last+tag@mail.tuxlab.co.uk", "first.last+tag@mail.tuxlab.co.uk"},
		{"  bob@tuxlab.org ", "bob@tuxlab.org"},
		{"a@b.test", ""}, {"a@b.invalid", ""}, {"a@b.localhost", ""}, {"a@localhost", ""}, {"a@b.local", ""},
		{"a@example.com", ""}, {"a@sub.example.org", ""}, {"a@x.example", ""}, {"a@router.home.arpa", ""}, {"a@x.onion", ""},
		{"plain", ""}, {"@tuxlab.org", ""}, {"a@", ""}, {"a@-bad-.org", ""}, {"a@tuxlab.o", ""}, {"a@tuxlab.123", ""},
		{"A <a@tuxlab.org>", ""}, {"a@tuxlab..org", ""}, {strings.Repeat("a", 250) + "@tuxlab.org", ""}, {"a b@tuxlab.org", ""},
	}
	for _, tt := range tests {
		var f errs.Fields
		got := NormalizeEmail(&f, []any{"email"}, tt.in)
		if got != tt.want || (tt.want == "") != (len(f) == 1) {
			t.Errorf("NormalizeEmail(%q) = %q with %v, want %q", tt.in, got, f, tt.want)
		}
	}
}

func TestRateLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewRateLimiter(6, func() time.Time { return now }) // one token every 10 s
	for i := range 6 {
		if ok, _ := l.Allow("ip"); !ok {
			t.Fatalf("attempt %d refused", i)
		}
	}
	ok, wait := l.Allow("ip")
	if ok || wait != 10*time.Second {
		t.Fatalf("7th attempt: ok=%v wait=%v", ok, wait)
	}
	if ok, _ := l.Allow("other"); !ok {
		t.Fatal("another key was limited")
	}
	now = now.Add(10 * time.Second)
	if ok, _ := l.Allow("ip"); !ok {
		t.Fatal("not refilled after 10 s")
	}
	now = now.Add(2 * time.Minute)
	l.Allow("fresh")
	if len(l.buckets) != 1 {
		t.Fatalf("%d buckets kept, want idle ones swept", len(l.buckets))
	}
}

func TestTokens(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 500000000, time.UTC)
	clock := func() time.Time { return now }
	tk := NewTokens([]byte("0123456789abcdef0123456789abcdef"), time.Hour, clock)
	tok, err := tk.Issue(&User{ID: 7, Username: "kim"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tk.Parse(tok)
	if err != nil || c.Subject != "7" || c.Username != "kim" || !c.Issued().Equal(now) {
		t.Fatalf("claims %+v, %v", c, err)
	}
	if _, err := NewTokens([]byte("another-key-another-key-another-k"), time.Hour, clock).Parse(tok); err == nil {
		t.Fatal("token verified with the wrong key")
	}
	now = now.Add(time.Hour + time.Second)
	if _, err := tk.Parse(tok); err == nil {
		t.Fatal("expired token accepted")
	}
}

// waiting counts the callers queued in a lane.
func (h *Hasher) waiting(lane int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queues[lane])
}

// waitFor blocks until a lane holds n callers: the goroutines have queued.
func waitFor(h *Hasher, lane, n int) {
	for h.waiting(lane) < n {
		time.Sleep(time.Millisecond)
	}
}

func TestHasherRefusesWhenQueueIsFull(t *testing.T) {
	h := NewHasher(4, 1, 1)                                            // one running, one waiting per lane
	if err := h.acquire(context.Background(), laneOther); err != nil { // occupy the only slot
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.do(context.Background(), func() {})
	}()
	waitFor(h, laneOther, 1) // the goroutine takes the lane's only place
	if err := h.do(context.Background(), func() {}); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("full queue: %v, want Unavailable", err)
	}
	h.release()
	wg.Wait()
	ok, err := h.Verify(context.Background(), "", "anything")
	if ok || err != nil {
		t.Fatalf("unknown user verified: %v %v", ok, err)
	}
}

// TestHasherServesKnownClientsFirst: behind a flood of unknown callers, a
// known client neither waits its turn nor is turned away.
func TestHasherServesKnownClientsFirst(t *testing.T) {
	h := NewHasher(4, 1, 3)
	if err := h.acquire(context.Background(), laneOther); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []string
		wg    sync.WaitGroup
	)
	run := func(ctx context.Context, name string) {
		defer wg.Done()
		if err := h.do(ctx, func() { mu.Lock(); order = append(order, name); mu.Unlock() }); err != nil {
			mu.Lock()
			order = append(order, name+" refused")
			mu.Unlock()
		}
	}
	for i := range 3 {
		wg.Add(1)
		go run(context.Background(), fmt.Sprintf("flood%d", i))
		waitFor(h, laneOther, i+1)
	}
	// The unknown lane is full: one more unknown caller is refused, a known one queues.
	if err := h.do(context.Background(), func() {}); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("a fourth unknown caller: %v", err)
	}
	wg.Add(1)
	go run(WithPriority(context.Background()), "known")
	waitFor(h, laneKnown, 1)
	h.release()
	wg.Wait()
	if want := []string{"known", "flood0", "flood1", "flood2"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	// A caller whose context ends while waiting leaves the queue.
	if err := h.acquire(context.Background(), laneOther); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.do(ctx, func() {}) }()
	waitFor(h, laneOther, 1)
	cancel()
	if err := <-done; err == nil || h.waiting(laneOther) != 0 {
		t.Fatalf("cancelled waiter: %v, %d still waiting", err, h.waiting(laneOther))
	}
	h.release()
	if err := h.do(context.Background(), func() {}); err != nil {
		t.Fatalf("the slot was lost: %v", err)
	}
}

// oneUser is a UserStore holding one user; it answers only FindUserByID.
type oneUser struct {
	UserStore
	u *User
}

func (s oneUser) FindUserByID(context.Context, int64) (*User, error) { u := *s.u; return &u, nil }

// TestPasswordChangeUsesTheOrdinaryLane: a signed-in user checking a current
// password waits in the hasher's ordinary lane, even with a context marked
// known, so wrong guesses sent at once cannot go ahead of logins from new
// addresses; and the attempts are rate limited per account.
func TestPasswordChangeUsesTheOrdinaryLane(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("the right password"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewService(oneUser{u: &User{ID: 7, Username: "kim", PasswordHash: string(hash)}}, Options{
		LoginPerUserPerMin: 3, BcryptWorkers: 1, BcryptCost: bcrypt.MinCost, Now: func() time.Time { return now }})
	if err := s.hasher.acquire(context.Background(), laneOther); err != nil { // occupy the only worker
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := s.PreparePasswordChange(WithPriority(context.Background()), 7, "a wrong guess", "a new password")
		done <- err
	}()
	for s.hasher.waiting(laneKnown)+s.hasher.waiting(laneOther) == 0 {
		time.Sleep(time.Millisecond) // until the check has queued, in whichever lane
	}
	if n := s.hasher.waiting(laneKnown); n != 0 {
		t.Errorf("%d password checks wait in the known clients' lane", n)
	}
	s.hasher.release()
	if err := <-done; err != ErrWrongPassword {
		t.Fatalf("wrong guess: %v", err)
	}
	// Two more guesses within the minute, then 429 whatever the password.
	for range 2 {
		if _, err := s.PreparePasswordChange(context.Background(), 7, "a wrong guess", "a new password"); err != ErrWrongPassword {
			t.Fatalf("guess: %v", err)
		}
	}
	var e *errs.Error
	if _, err := s.PreparePasswordChange(context.Background(), 7, "the right password", "a new password"); !errors.As(err, &e) || e.Kind != errs.TooManyRequests || e.RetryAfter <= 0 {
		t.Fatalf("fourth attempt in a minute: %v", err)
	}
	now = now.Add(20 * time.Second) // one attempt back
	if c, err := s.PreparePasswordChange(context.Background(), 7, "the right password", "a new password"); err != nil || c.hash == "" {
		t.Fatalf("after the wait: %v", err)
	}
}
