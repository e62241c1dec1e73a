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

// resetsOn returns an error when password reset is off (no mail server).
func (s *Server) resetsOn() error {
	if s.resets == nil || !s.resets.Enabled() {
		return auth.ErrResetOff
	}
	return nil
}

type forgotPasswordRequest struct {
	Email *string `json:"email"`
}

// handleForgotPassword mails a reset link to the account with the address,
// if there is one; the answer is the same either way.
func (s *Server) handleForgotPassword(w http.ResponseWriter, r *http.Request) error {
	if err := s.resetsOn(); err != nil {
		return err
	}
	if err := s.auth.RateLimitIP(s.clientIP(r)); err != nil {
		return err
	}
	var req forgotPasswordRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "email", req.Email)
	if err := f.Err(); err != nil {
		return err
	}
	if err := s.resets.Forgot(r.Context(), *req.Email); err != nil {
		return errs.In("body", err)
	}
	writeJSON(w, http.StatusOK, map[string]string{"detail": forgotSent})
	return nil
}

type resetPasswordRequest struct {
	Token       *string `json:"token"`
	NewPassword *string `json:"new_password"`
}

// handleResetPassword sets a new password with a reset token from a mail.
func (s *Server) handleResetPassword(w http.ResponseWriter, r *http.Request) error {
	if err := s.resetsOn(); err != nil {
		return err
	}
	if err := s.auth.RateLimitIP(s.clientIP(r)); err != nil {
		return err
	}
	var req resetPasswordRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "token", req.Token)
	requireField(&f, "new_password", req.NewPassword)
	if err := f.Err(); err != nil {
		return err
	}
	if err := s.resets.Reset(r.Context(), *req.Token, *req.NewPassword); err != nil {
		return errs.In("body", err)
	}
	writeJSON(w, http.StatusOK, map[string]string{"detail": resetDone})
	return nil
}

// resendSent is resend-verification's one answer, whether the address is known or not.
const resendSent = "If an account that is not confirmed yet has this address, a new confirmation link is on its way. It works once, for 24 hours."

// verifyDone is verify-email's answer.
const verifyDone = "E-mail address confirmed: you can sign in"

// verificationsOn returns an error when e-mail verification is off.
func (s *Server) verificationsOn() error {
	if s.verifications == nil {
		return auth.ErrVerifyOff
	}
	return nil
}

type verifyEmailRequest struct {
	Token *string `json:"token"`
}

// handleVerifyEmail confirms an account's address with the token of its mail.
func (s *Server) handleVerifyEmail(w http.ResponseWriter, r *http.Request) error {
	if err := s.verificationsOn(); err != nil {
		return err
	}
	if err := s.auth.RateLimitIP(s.clientIP(r)); err != nil {
		return err
	}
	var req verifyEmailRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "token", req.Token)
	if err := f.Err(); err != nil {
		return err
	}
	if err := s.verifications.Verify(r.Context(), *req.Token); err != nil {
		return errs.In("body", err)
	}
	writeJSON(w, http.StatusOK, map[string]string{"detail": verifyDone})
	return nil
}

// handleResendVerification mails a new confirmation link to the unconfirmed
// account with the address, if there is one; the answer is the same either way.
func (s *Server) handleResendVerification(w http.ResponseWriter, r *http.Request) error {
	if err := s.verificationsOn(); err != nil {
		return err
	}
	if err := s.auth.RateLimitIP(s.clientIP(r)); err != nil {
		return err
	}
	var req forgotPasswordRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "email", req.Email)
	if err := f.Err(); err != nil {
		return err
	}
	if err := s.verifications.Resend(r.Context(), *req.Email); err != nil {
		return errs.In("body", err)
	}
	writeJSON(w, http.StatusOK, map[string]string{"detail": resendSent})
	return nil
}
