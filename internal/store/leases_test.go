package store_test

import (
	"context"
	"testing"
	"time"

	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// TestLeases: a lease has one holder at a time; its holder renews it, another
// process takes it only once it has expired or been released.
func TestLeases(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		l := db.Leases()
		t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		steps := []struct {
			name   string
			holder string
			at     time.Duration // after t0
			want   bool
		}{
			{"free: a takes it", "a", 0, true},
			{"held by a: b is refused", "b", 5 * time.Second, false},
			{"a renews it", "a", 9 * time.Second, true},
			{"renewed: b is still refused at the first expiry", "b", 11 * time.Second, false},
			{"expired: b takes it", "b", 20 * time.Second, true},
			{"held by b: a is refused", "a", 21 * time.Second, false},
		}
		for _, s := range steps {
			got, err := l.AcquireLease(ctx, "work", s.holder, t0.Add(s.at), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got != s.want {
				t.Fatalf("%s: acquired %v, want %v", s.name, got, s.want)
			}
		}
		if holder, _, err := l.LeaseHolder(ctx, "work"); err != nil || holder != "b" {
			t.Fatalf("holder %q (%v), want b", holder, err)
		}
		// A release by someone else changes nothing; the holder's frees it at once.
		if err := l.ReleaseLease(ctx, "work", "a"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := l.AcquireLease(ctx, "work", "a", t0.Add(22*time.Second), 10*time.Second); ok {
			t.Fatal("a took a lease b holds after releasing what it did not hold")
		}
		if err := l.ReleaseLease(ctx, "work", "b"); err != nil {
			t.Fatal(err)
		}
		if ok, err := l.AcquireLease(ctx, "work", "a", t0.Add(23*time.Second), 10*time.Second); err != nil || !ok {
			t.Fatalf("released: a acquired %v (%v), want true", ok, err)
		}
	})
}
