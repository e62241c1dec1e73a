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
// containerID for user userID until exp: "USER.EXP.MAC", where MAC is an
// HMAC under the server's secret, so it cannot be made without it nor
// changed to another user, sandbox, port or time. A previewed page runs in
// an opaque origin (docs/preview.md) and gets no session cookie, so the
// ticket, in the preview's URL, is what lets its own requests in.
func (t *Tokens) PreviewTicket(userID, containerID int64, port int, exp time.Time) string {
	head := strconv.FormatInt(userID, 10) + "." + strconv.FormatInt(exp.Unix(), 10)
	return head + "." + t.previewMAC(head, containerID, port)
}

// CheckPreviewTicket returns the user a ticket was issued to for port of
// sandbox containerID, and whether it is genuine and unexpired.
func (t *Tokens) CheckPreviewTicket(ticket string, containerID int64, port int) (int64, bool) {
	user, rest, ok1 := strings.Cut(ticket, ".")
	exp, mac, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 {
		return 0, false
	}
	uid, err1 := strconv.ParseInt(user, 10, 64)
	unix, err2 := strconv.ParseInt(exp, 10, 64)
	if err1 != nil || err2 != nil || uid < 1 {
		return 0, false
	}
	if !hmac.Equal([]byte(mac), []byte(t.previewMAC(user+"."+exp, containerID, port))) || !t.now().Before(time.Unix(unix, 0)) {
		return 0, false
	}
	return uid, true
}

// previewMAC is the MAC of a ticket's head for a sandbox's port.
func (t *Tokens) previewMAC(head string, containerID int64, port int) string {
	m := hmac.New(sha256.New, t.secret)
	m.Write([]byte(previewLabel + head + "." + strconv.FormatInt(containerID, 10) + "." + strconv.Itoa(port)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// PreviewTicket returns a ticket for userID to preview port of sandbox
// containerID, valid for PreviewTicketTTL (see Tokens.PreviewTicket).
func (s *Service) PreviewTicket(userID, containerID int64, port int) string {
	return s.tokens.PreviewTicket(userID, containerID, port, s.tokens.now().Add(PreviewTicketTTL))
}

// CheckPreviewTicket returns the user of a genuine, unexpired preview ticket
// for port of sandbox containerID (see Tokens.CheckPreviewTicket).
func (s *Service) CheckPreviewTicket(ticket string, containerID int64, port int) (int64, bool) {
	return s.tokens.CheckPreviewTicket(ticket, containerID, port)
}
