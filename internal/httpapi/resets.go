package httpapi

import (
	"net/http"

	"tuxlab/internal/auth"
	"tuxlab/internal/errs"
)

// accountRoutes are the routes that get a user back into an account:
// password reset by mail, and e-mail verification on registration.
func (s *Server) accountRoutes() []route {
	return []route{
		{"POST", "/api/auth/forgot-password", public, s.handleForgotPassword, docForgotPassword},
		{"POST", "/api/auth/reset-password", public, s.handleResetPassword, docResetPassword},
		{"POST", "/api/auth/verify-email", public, s.handleVerifyEmail, docVerifyEmail},
		{"POST", "/api/auth/resend-verification", public, s.handleResendVerification, docResendVerification},
	}
}

// forgotSent is forgot-password's one answer, whether the address is known or not.
const forgotSent = "If an account has this address, a mail with a link to reset its password is on its way. The link works once, for an hour."

// resetDone is reset-password's answer.
const resetDone = "Password changed: sign in with your new password"

// resendSent is resend-verification's one answer, whether the address is known or not.
const resendSent = "If an account that is not confirmed yet has this address, a new confirmation link is on its way. It works once, for 24 hours."

// verifyDone is verify-email's answer.
const verifyDone = "E-mail address confirmed: you can sign in"

// resetsOn returns an error when password reset is off (no mail server).
func (s *Server) resetsOn() error {
	if s.resets == nil || !s.resets.Enabled() {
		return auth.ErrResetOff
	}
	return nil
}

// verificationsOn returns an error when e-mail verification is off.
func (s *Server) verificationsOn() error {
	if s.verifications == nil {
		return auth.ErrVerifyOff
	}
	return nil
}

// accountRequest is the body of the account routes; each route requires
// its own fields and ignores the others.
type accountRequest struct {
	Email       *string `json:"email"`
	Token       *string `json:"token"`
	NewPassword *string `json:"new_password"`
}

// field returns the body field called name.
func (a *accountRequest) field(name string) *string {
	switch name {
	case "email":
		return a.Email
	case "token":
		return a.Token
	case "new_password":
		return a.NewPassword
	}
	panic("httpapi: no account request field " + name)
}

// readAccountRequest does what every account route does before its own
// step: the feature is on, the caller's address is within its rate, and
// the body has the fields the route requires (a 422 names each one missing).
func (s *Server) readAccountRequest(r *http.Request, on func() error, required ...string) (*accountRequest, error) {
	if err := on(); err != nil {
		return nil, err
	}
	if err := s.auth.RateLimitIP(s.clientIP(r)); err != nil {
		return nil, err
	}
	var req accountRequest
	if err := decodeJSON(r, &req); err != nil {
		return nil, err
	}
	var f errs.Fields
	for _, name := range required {
		requireField(&f, name, req.field(name))
	}
	return &req, f.Err()
}

// answerAccount writes an account route's answer once its step is done; a
// step's error belongs to the body.
func answerAccount(w http.ResponseWriter, err error, detail string) error {
	if err != nil {
		return errs.In("body", err)
	}
	writeJSON(w, http.StatusOK, map[string]string{"detail": detail})
	return nil
}

// handleForgotPassword mails a reset link to the account with the address,
// if there is one; the answer is the same either way.
func (s *Server) handleForgotPassword(w http.ResponseWriter, r *http.Request) error {
	req, err := s.readAccountRequest(r, s.resetsOn, "email")
	if err != nil {
		return err
	}
	return answerAccount(w, s.resets.Forgot(r.Context(), *req.Email), forgotSent)
}

// handleResetPassword sets a new password with a reset token from a mail.
func (s *Server) handleResetPassword(w http.ResponseWriter, r *http.Request) error {
	req, err := s.readAccountRequest(r, s.resetsOn, "token", "new_password")
	if err != nil {
		return err
	}
	return answerAccount(w, s.resets.Reset(r.Context(), *req.Token, *req.NewPassword), resetDone)
}

// handleVerifyEmail confirms an account's address with the token of its mail.
func (s *Server) handleVerifyEmail(w http.ResponseWriter, r *http.Request) error {
	req, err := s.readAccountRequest(r, s.verificationsOn, "token")
	if err != nil {
		return err
	}
	return answerAccount(w, s.verifications.Verify(r.Context(), *req.Token), verifyDone)
}

// handleResendVerification mails a new confirmation link to the unconfirmed
// account with the address, if there is one; the answer is the same either way.
func (s *Server) handleResendVerification(w http.ResponseWriter, r *http.Request) error {
	req, err := s.readAccountRequest(r, s.verificationsOn, "email")
	if err != nil {
		return err
	}
	return answerAccount(w, s.verifications.Resend(r.Context(), *req.Email), resendSent)
}
