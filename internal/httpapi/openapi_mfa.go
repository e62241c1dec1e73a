package httpapi

import (
	"maps"
)

// The OpenAPI schemas and operations of two-factor sign-in (docs/mfa.md).

func init() {
	maps.Copy(schemas, mfaSchemas)
	// The user and the login learn of two-factor sign-in here, beside the rest of it.
	user := schemas["User"].(map[string]any)
	user["properties"].(map[string]any)["mfa_enabled"] = map[string]any{"type": "boolean", "description": "Whether two-factor sign-in is on."}
	user["required"] = append(user["required"].([]string), "mfa_enabled")
	login := schemas["LoginRequest"].(map[string]any)
	login["properties"].(map[string]any)["otp"] = map[string]any{"type": "string", "maxLength": 64,
		"description": "The second factor of an account with two-factor sign-in on: the 6-digit code of the authenticator app, or one of the recovery codes (xxxx-xxxx-xxxx; dashes, spaces and case do not matter). Ignored for an account without it."}
	me := maps.Clone(user)
	meProps := maps.Clone(user["properties"].(map[string]any))
	meProps["mfa_setup_required"] = map[string]any{"type": "boolean",
		"description": "true for an admin or instructor without two-factor sign-in on an install that requires it: every route but this one, GET /api/profile/me, GET /api/auth/mfa, the setup and enable routes and logout answers 403 until it is on."}
	me["properties"] = meProps
	me["required"] = append(append([]string{}, user["required"].([]string)...), "mfa_setup_required")
	schemas["Me"] = me
}

var mfaSchemas = map[string]any{
	"MFASetup": obj([]string{"secret", "otpauth_uri", "qr_code"}, map[string]any{
		"secret": map[string]any{"type": "string", "pattern": "^[A-Z2-7]+$",
			"description": "The TOTP secret in base32 (160 bits), for typing into an authenticator app. Shown in this answer only: no other response carries it."},
		"otpauth_uri": map[string]any{"type": "string", "pattern": "^otpauth://totp/",
			"description": "The otpauth:// URI (issuer tuxlab, SHA1, 6 digits, 30 s) an authenticator app reads from the QR code."},
		"qr_code": map[string]any{"type": "string", "pattern": "^data:image/png;base64,",
			"description": "otpauth_uri as a QR code: a PNG data: URI, usable as an <img> src."},
	}),
	"MFACode": obj([]string{"code"}, map[string]any{
		"code": map[string]any{"type": "string", "maxLength": 64, "description": "The current 6-digit code of the authenticator app."},
	}),
	"MFADisable": obj([]string{"password", "code"}, map[string]any{
		"password": strSchema,
		"code":     map[string]any{"type": "string", "maxLength": 64, "description": "A current code of the authenticator app, or an unused recovery code (which is then used)."},
	}),
	"RecoveryCodes": obj([]string{"recovery_codes"}, map[string]any{
		"recovery_codes": map[string]any{"type": "array", "minItems": 10, "maxItems": 10,
			"items":       map[string]any{"type": "string", "pattern": "^[0-9a-hjkmnp-tv-z]{4}-[0-9a-hjkmnp-tv-z]{4}-[0-9a-hjkmnp-tv-z]{4}$"},
			"description": "Ten one-time codes, each good for one sign-in (or turning two-factor sign-in off) instead of the app's code. Shown this once: only their hashes are kept."},
	}),
	"MFAStatus": obj([]string{"enabled", "enabled_at", "recovery_codes_left", "setup_required"}, map[string]any{
		"enabled":             boolSchema,
		"enabled_at":          nullableTS,
		"recovery_codes_left": map[string]any{"type": "integer", "minimum": 0, "description": "Recovery codes not used yet (0 while off)."},
		"setup_required":      map[string]any{"type": "boolean", "description": "The install requires two-factor sign-in of this account's role and it is not on (see Me)."},
	}),
	"MFASetting": obj([]string{"required", "roles"}, map[string]any{
		"required": map[string]any{"type": "boolean", "description": "Whether the roles listed must use two-factor sign-in."},
		"roles":    map[string]any{"type": "array", "items": roleSchema, "description": "The roles the rule applies to: instructor and admin."},
	}),
}

// mfaHeldBack is the 403 every route but a few answers to an admin or
// instructor the install requires two-factor sign-in of.
const mfaHeldBack = " When the install requires two-factor sign-in of admins and instructors (`PUT /api/admin/settings/mfa`), such a user without it is still let in here."

var (
	docMFASetup = op{tag: "auth", summary: "Set up two-factor sign-in: a new TOTP secret, kept pending", status: 200, result: "MFASetup", errors: []int{409},
		desc: "Creates a TOTP secret (RFC 6238: SHA1, 6 digits, 30-second steps) and keeps it pending until `POST /api/auth/mfa/enable` confirms it with a code; a second setup replaces a pending one. " +
			"The secret is in this answer only (sent with Cache-Control: no-store) and is stored encrypted. 409 while two-factor sign-in is on: turn it off first." + mfaHeldBack}
	docMFAEnable = op{tag: "auth", summary: "Turn two-factor sign-in on with a current code of the pending secret", body: "MFACode", status: 200, result: "RecoveryCodes", errors: []int{409, 429},
		desc: "A current code of the secret from setup (one step of clock drift either way) turns two-factor sign-in on and returns ten recovery codes, shown this once. From then on a login needs `otp`. " +
			"A wrong code is 422 at [\"body\", \"code\"]; 409 without a pending setup or when it is on already. Code attempts are limited per account (TUXLAB_AUTH_RATE_USER an hour, 429 with Retry-After)." + mfaHeldBack}
	docMFADisable = op{tag: "auth", summary: "Turn two-factor sign-in off (password and a code)", body: "MFADisable", status: 200, result: "Message", errors: []int{409, 429, 503},
		desc: "Needs the account's password and a current code of the app or an unused recovery code. A wrong password is 422 at [\"body\", \"password\"], a wrong or used code 422 at [\"body\", \"code\"]; 409 when it is not on. The secret and the recovery codes are deleted. Rate limited like a password change (password) and a login's code (429)."}
	docMFAStatus = op{tag: "auth", summary: "Your two-factor sign-in: on or off, recovery codes left", status: 200, result: "MFAStatus",
		desc: "Never a secret or a code." + mfaHeldBack}
	docAdminMFASetting    = op{tag: "admin", summary: "Whether admins and instructors must use two-factor sign-in", status: 200, result: "MFASetting"}
	docAdminSetMFASetting = op{tag: "admin", summary: "Require two-factor sign-in of admins and instructors, or not", status: 200, result: "MFASetting",
		params: []param{{name: "required", schema: boolSchema, required: true, desc: "true: admins and instructors must turn two-factor sign-in on."}},
		desc: "While it is required, an admin or instructor without two-factor sign-in can still sign in, but every route except `GET /api/auth/me`, `GET /api/profile/me`, `GET /api/auth/mfa`, `POST /api/auth/mfa/setup`, `POST /api/auth/mfa/enable` and `POST /api/auth/logout` answers 403 `" +
			"Two-factor sign-in is required for your role: turn it on first (POST /api/auth/mfa/setup, then POST /api/auth/mfa/enable)`. This includes the admin who sets it: they turn it on before anything else. Applies at once on this server, within 2 s on other replicas. Students are never held back."}
	docAdminResetMFA = op{tag: "admin", summary: "Turn a user's two-factor sign-in off (lost app and recovery codes)", status: 200, result: "User", errors: []int{404},
		desc: "For a user who lost both the authenticator app and every recovery code: their secret and codes are deleted; they sign in with the password alone and may set it up again. Without two-factor sign-in on it changes nothing and still answers 200."}
)
