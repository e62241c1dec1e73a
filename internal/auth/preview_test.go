package auth

import (
	"strings"
	"testing"
	"time"
)

// TestPreviewTicketBindsItsShare: a ticket opens only the user, share,
// sandbox and port it was made for, until it expires; a ticket changed to
// another share (a guest's made into the owner's), or of the earlier form
// without a share, is refused.
func TestPreviewTicketBindsItsShare(t *testing.T) {
	now := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	tk := NewTokens([]byte("0123456789abcdef0123456789abcdef"), time.Hour, func() time.Time { return now })
	guest := tk.PreviewTicket(7, 3, 42, 8080, now.Add(time.Hour))
	parts := strings.Split(guest, ".")
	for _, tc := range []struct {
		name      string
		ticket    string
		container int64
		port      int
		ok        bool
	}{
		{"as made", guest, 42, 8080, true},
		{"another sandbox", guest, 43, 8080, false},
		{"another port", guest, 42, 8081, false},
		{"the owner's share 0", strings.Join([]string{parts[0], "0", parts[2], parts[3]}, "."), 42, 8080, false},
		{"another share", strings.Join([]string{parts[0], "4", parts[2], parts[3]}, "."), 42, 8080, false},
		{"another user", strings.Join([]string{"8", parts[1], parts[2], parts[3]}, "."), 42, 8080, false},
		{"without its share", strings.Join([]string{parts[0], parts[2], parts[3]}, "."), 42, 8080, false},
		{"a negative share", tk.PreviewTicket(7, -1, 42, 8080, now.Add(time.Hour)), 42, 8080, false},
		{"expired", tk.PreviewTicket(7, 3, 42, 8080, now), 42, 8080, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uid, sid, ok := tk.CheckPreviewTicket(tc.ticket, tc.container, tc.port)
			if ok != tc.ok || (ok && (uid != 7 || sid != 3)) {
				t.Fatalf("CheckPreviewTicket(%q) = %d, %d, %v; want ok %v", tc.ticket, uid, sid, ok, tc.ok)
			}
		})
	}
	if uid, sid, ok := tk.CheckPreviewTicket(tk.PreviewTicket(7, 0, 42, 8080, now.Add(time.Minute)), 42, 8080); !ok || uid != 7 || sid != 0 {
		t.Fatalf("the owner's ticket: %d, %d, %v", uid, sid, ok)
	}
}
