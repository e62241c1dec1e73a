package httpapi

import (
	"maps"

	"tuxlab/internal/auth"
)

// The OpenAPI schemas and operations of password reset and e-mail verification.

func init() { maps.Copy(schemas, accountSchemas) }

var accountSchemas = map[string]any{
	"ForgotPasswordRequest": obj([]string{"email"}, map[string]any{
		"email": map[string]any{"type": "string", "format": "email", "maxLength": 254, "description": "The account's e-mail address, checked as at registration (any case)."},
	}),
	"ResetPasswordRequest": obj([]string{"token", "new_password"}, map[string]any{
		"token": map[string]any{"type": "string", "description": "The `token` parameter of the link in the mail: 43 characters of base64url."},
		"new_password": map[string]any{"type": "string", "maxLength": auth.MaxPasswordLen,
			"description": "The registration rules: 8 to 72 bytes of UTF-8 (not characters), not only spaces, not the username."},
	}),
	"VerifyEmailRequest": obj([]string{"token"}, map[string]any{
		"token": map[string]any{"type": "string", "description": "The `token` parameter of the link in the confirmation mail: 43 characters of base64url."},
	}),
	"ResendVerificationRequest": obj([]string{"email"}, map[string]any{
		"email": map[string]any{"type": "string", "format": "email", "maxLength": 254, "description": "The address the account registered with (any case)."},
	}),
}

const verifyOffDesc = " 503 when e-mail verification is off (`TUXLAB_REQUIRE_EMAIL_VERIFICATION` unset or false): accounts need no confirmation."

const resetOffDesc = " 503 when password reset is off: the server has no mail server configured (`TUXLAB_SMTP_URL`)."

var (
	docForgotPassword = op{tag: "auth", summary: "Ask for a password reset link by e-mail", body: "ForgotPasswordRequest", status: 200, result: "Message",
		errors: []int{429, 503},
		desc: "Always 200 with the same body whether an active account has the address or not, after the same work, so the answer tells nobody which addresses have accounts. " +
			"When one has, a one-time token valid for an hour is made (only its SHA-256 is stored) and a mail is queued with the link `TUXLAB_PUBLIC_URL/reset-password?token=...`; " +
			"the mail is sent by a background queue that retries while the mail server is down, so the request never waits for it. " +
			"422 for a malformed address. Rate limited per client IP (TUXLAB_AUTH_RATE_IP a minute, shared with login and registration) and per address (5 an hour, known or not): 429 with Retry-After." + resetOffDesc}
	docResetPassword = op{tag: "auth", summary: "Set a new password with the token of a reset mail", body: "ResetPasswordRequest", status: 200, result: "Message",
		errors: []int{400, 429, 503},
		desc: "400 when the token is unknown (`This password reset link is not valid: ask for a new one`), used (`... was already used ...`: every link of the account is used up by a reset) or expired (`... has expired ...`, an hour after it was asked for). " +
			"422 at [\"body\", \"new_password\"] for a password that breaks the registration rules. " +
			"On success, in one transaction: the password changes, the account's reset links stop working, and every token and browser session issued before is refused (401), on every device; open terminals end. Sign in again with the new password. " +
			"Rate limited per client IP (429 with Retry-After)." + resetOffDesc}
	docVerifyEmail = op{tag: "auth", summary: "Confirm an account's e-mail address with the token of its confirmation mail", body: "VerifyEmailRequest", status: 200, result: "Message",
		errors: []int{400, 429, 503},
		desc: "With `TUXLAB_REQUIRE_EMAIL_VERIFICATION` on, registration mails a link `TUXLAB_PUBLIC_URL/verify-email?token=...`, valid 24 hours, and the account cannot sign in (403 `Confirm your e-mail address: we sent you a link`) until its token is sent here. " +
			"400 when the token is unknown (`This e-mail confirmation link is not valid: ask for a new one`), used (`... was already used ...`: confirming uses up every link of the account) or expired (`... has expired ...`). " +
			"On success the address is confirmed, in the same transaction that uses the token up. Rate limited per client IP (429 with Retry-After)." + verifyOffDesc}
	docResendVerification = op{tag: "auth", summary: "Ask for a new e-mail confirmation link", body: "ResendVerificationRequest", status: 200, result: "Message",
		errors: []int{429, 503},
		desc: "Always 200 with the same body whether an unconfirmed account has the address or not, so the answer tells nobody which addresses have accounts; only then is a mail queued, with a new link valid 24 hours (earlier links keep working until used or expired). " +
			"422 for a malformed address. Rate limited per client IP (TUXLAB_AUTH_RATE_IP a minute) and per address (5 an hour, known or not), as forgot-password: 429 with Retry-After." + verifyOffDesc}
)
