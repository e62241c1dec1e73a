package auth

import (
	"errors"
	"testing"
	"time"
)

// TestSealOpens: a sealed TOTP secret opens for its user under the same
// SECRET_KEY, and for no other user nor under another key.
func TestSealOpens(t *testing.T) {
	t.Parallel()
	a := NewService(nil, Options{Secret: []byte("one key, long enough for HS256 signing")})
	b := NewService(nil, Options{Secret: []byte("another key, long enough for HS256 too")})
	sealed, err := a.seal(7, "JBSWY3DPEHPK3PXP")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.open(7, sealed); err != nil || got != "JBSWY3DPEHPK3PXP" {
		t.Fatalf("open = %q, %v", got, err)
	}
	for name, open := range map[string]func() (string, error){
		"another user": func() (string, error) { return a.open(8, sealed) },
		"another key":  func() (string, error) { return b.open(7, sealed) },
		"cut short":    func() (string, error) { return a.open(7, sealed[:5]) },
	} {
		if _, err := open(); !errors.Is(err, errSecretUnreadable) {
			t.Errorf("%s: %v, want errSecretUnreadable", name, err)
		}
	}
}

// TestMatchTOTP: the previous, current and next step's codes pass, with
// the step they belong to; none at or before the last used step does.
func TestMatchTOTP(t *testing.T) {
	t.Parallel()
	const secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ" // RFC 6238's SHA-1 key, "12345678901234567890"
	now := time.Unix(59, 0)                           // step 1; RFC 6238's table: 94287082 at 59 s, 8 digits
	if step, ok := matchTOTP(secret, "287082", now, 0); !ok || step != 1 {
		t.Fatalf("the RFC's code at 59 s: step %d, %v", step, ok)
	}
	if _, ok := matchTOTP(secret, "287082", now, 1); ok {
		t.Error("a code of the last used step passed")
	}
	if _, ok := matchTOTP(secret, "287082", now.Add(90*time.Second), 0); ok {
		t.Error("a code three steps old passed")
	}
	if _, ok := matchTOTP(secret, "28708", now, 0); ok {
		t.Error("five digits passed")
	}
}
