package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// previewLabel separates the preview ticket's HMAC from every other use of
// the secret (tokens, CSRF proofs).
const previewLabel = "tuxlab preview ticket\x00"

// PreviewTicketTTL is how long a preview ticket opens its preview.
const PreviewTicketTTL = time.Hour

// PreviewTicket returns a ticket that opens the preview of port of sandbox
// containerID for user userID until exp: "USER.SHARE.EXP.MAC", where MAC is
// an HMAC under the server's secret, so it cannot be made without it nor
// changed to another user, share, sandbox, port or time. SHARE is 0 for the
// sandbox's owner, and the id of the share that lets a guest in otherwise
// (the caller checks that share on every request: ending it ends the
// ticket). A previewed page runs in an opaque origin (docs/preview.md) and
// gets no session cookie, so the ticket, in the preview's URL, is what lets
// its own requests in.
func (t *Tokens) PreviewTicket(userID, shareID, containerID int64, port int, exp time.Time) string {
	head := strconv.FormatInt(userID, 10) + "." + strconv.FormatInt(shareID, 10) + "." + strconv.FormatInt(exp.Unix(), 10)
	return head + "." + t.previewMAC(head, containerID, port)
}

// CheckPreviewTicket returns the user and the share (0: the owner's ticket)
// a ticket was issued to for port of sandbox containerID, and whether it is
// genuine and unexpired.
func (t *Tokens) CheckPreviewTicket(ticket string, containerID int64, port int) (userID, shareID int64, ok bool) {
	parts := strings.Split(ticket, ".")
	if len(parts) != 4 {
		return 0, 0, false
	}
	uid, err1 := strconv.ParseInt(parts[0], 10, 64)
	sid, err2 := strconv.ParseInt(parts[1], 10, 64)
	unix, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || uid < 1 || sid < 0 {
		return 0, 0, false
	}
	head := parts[0] + "." + parts[1] + "." + parts[2]
	if !hmac.Equal([]byte(parts[3]), []byte(t.previewMAC(head, containerID, port))) || !t.now().Before(time.Unix(unix, 0)) {
		return 0, 0, false
	}
	return uid, sid, true
}

// previewMAC is the MAC of a ticket's head for a sandbox's port.
func (t *Tokens) previewMAC(head string, containerID int64, port int) string {
	m := hmac.New(sha256.New, t.secret)
	m.Write([]byte(previewLabel + head + "." + strconv.FormatInt(containerID, 10) + "." + strconv.Itoa(port)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// PreviewTicket returns a ticket for userID to preview port of sandbox
// containerID, as its owner (shareID 0) or through share shareID, valid for
// PreviewTicketTTL (see Tokens.PreviewTicket).
func (s *Service) PreviewTicket(userID, shareID, containerID int64, port int) string {
	return s.tokens.PreviewTicket(userID, shareID, containerID, port, s.tokens.now().Add(PreviewTicketTTL))
}

// CheckPreviewTicket returns the user and share of a genuine, unexpired
// preview ticket for port of sandbox containerID (see
// Tokens.CheckPreviewTicket).
func (s *Service) CheckPreviewTicket(ticket string, containerID int64, port int) (userID, shareID int64, ok bool) {
	return s.tokens.CheckPreviewTicket(ticket, containerID, port)
}
