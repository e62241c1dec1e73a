package auth

import (
	"math"
	"sync"
	"time"
)

// RateLimiter is a token bucket per key (a client IP or a username): each key
// may make perMinute attempts in a burst, refilled evenly over a minute (or
// over the window of NewRateLimiterPer). Idle keys are forgotten so the map
// cannot grow without bound.
type RateLimiter struct {
	mu        sync.Mutex
	perMinute float64 // the burst: attempts per window
	window    time.Duration
	buckets   map[string]*bucket
	now       func() time.Time
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// NewRateLimiter returns a limiter allowing perMinute attempts per key.
func NewRateLimiter(perMinute int, now func() time.Time) *RateLimiter {
	return NewRateLimiterPer(perMinute, time.Minute, now)
}

// NewRateLimiterPer returns a limiter allowing n attempts per key in a burst,
// refilled evenly over window.
func NewRateLimiterPer(n int, window time.Duration, now func() time.Time) *RateLimiter {
	return &RateLimiter{perMinute: float64(n), window: window, buckets: make(map[string]*bucket), now: now}
}

// Allow takes one attempt for key. When none is left it returns false and how long
// until the next one.
func (l *RateLimiter) Allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.sweep(now)
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.perMinute, last: now}
		l.buckets[key] = b
	}
	rate := l.perMinute / l.window.Seconds() // tokens per second
	b.tokens = math.Min(l.perMinute, b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / rate * float64(time.Second))
	return false, wait
}

// sweep drops buckets that have refilled completely, at most once a window.
func (l *RateLimiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < l.window {
		return
	}
	l.lastSweep = now
	for k, b := range l.buckets {
		if now.Sub(b.last) >= l.window {
			delete(l.buckets, k)
		}
	}
}
