package httpapi

import (
	"maps"

	"tuxlab/internal/auth"
)

// The OpenAPI schemas and operations of the profile and the avatar files.

func init() { maps.Copy(schemas, profileSchemas) }

var profileSchemas = map[string]any{
	"Profile": obj([]string{"id", "username", "email", "role", "full_name", "bio", "avatar_url", "created_at", "updated_at"}, map[string]any{
		"id": intSchema, "username": strSchema, "email": map[string]any{"type": "string", "format": "email"}, "role": roleSchema,
		"full_name": map[string]any{"type": "string", "maxLength": 100, "description": "One line; empty when not set."},
		"bio":       map[string]any{"type": "string", "maxLength": 1000, "description": "Plain text; empty when not set."},
		"avatar_url": map[string]any{"type": []string{"string", "null"}, "pattern": `^/avatars/[0-9a-f]{32}\.png$`,
			"description": "Path of the avatar (a square PNG, at most 512x512) on this server, public and unguessable; a new upload gets a new URL. null without an avatar."},
		"created_at": tsSchema, "updated_at": tsSchema,
	}),
	"ProfileUpdate": obj(nil, map[string]any{
		"full_name": map[string]any{"type": "string", "maxLength": 100, "description": "One line; \"\" clears it."},
		"bio":       map[string]any{"type": "string", "maxLength": 1000, "description": "Line breaks and tabs allowed, no other control characters; \"\" clears it."},
		"email":     map[string]any{"type": "string", "format": "email", "maxLength": 254, "description": "Checked as at registration."},
	}),
	"PasswordChange": obj([]string{"current_password", "new_password"}, map[string]any{
		"current_password": strSchema,
		"new_password":     map[string]any{"type": "string", "maxLength": auth.MaxPasswordLen, "description": "The registration rules (8 to 72 bytes of UTF-8, not characters); must differ from the current one."},
	}),
	"PasswordChanged": obj([]string{"detail", "access_token", "token_type"}, map[string]any{
		"detail":       map[string]any{"const": "Password changed"},
		"access_token": map[string]any{"type": "string", "description": "A token issued after the change: every older one, including the one that made this call, is now refused."},
		"token_type":   map[string]any{"const": "bearer"},
	}),
	"AvatarUpload": obj([]string{"file"}, map[string]any{
		"file": map[string]any{"type": "string", "contentMediaType": "application/octet-stream",
			"description": "A PNG, JPEG, GIF (first frame) or WebP image, recognised by its content whatever its name or type; at most 2 MiB and 4096x4096 pixels."},
	}),
}

var (
	docProfile       = op{tag: "profile", summary: "Your profile", status: 200, result: "Profile"}
	docUpdateProfile = op{tag: "profile", summary: "Change your full name, bio or e-mail (only the fields given change)", body: "ProfileUpdate", status: 200, result: "Profile",
		errors: []int{409}, desc: "Absent or null fields stay as they are. 409 `Email already registered` when another account has the e-mail; 422 lists every invalid field."}
	docChangePassword = op{tag: "profile", summary: "Change your password", body: "PasswordChange", status: 200, result: "PasswordChanged",
		errors: []int{429, 503}, desc: "A wrong current password is 422 at [\"body\", \"current_password\"] (`Current password is incorrect`); a new password that breaks the registration rules or equals the current one is 422 at [\"body\", \"new_password\"]. Every token issued before the change is refused from then on (401); the answer carries a new one. Attempts are rate limited per account like logins (429 with Retry-After, even with the right password), and count towards the account's login ceiling."}
	docUploadAvatar = op{tag: "profile", summary: "Upload your avatar (multipart field `file`)", form: "AvatarUpload", status: 200, result: "Profile", errors: []int{503},
		desc: "PNG, JPEG, GIF or WebP, recognised by content. 413 over 2 MiB; 422 for anything that is not such an image, a damaged one, one over 4096x4096 pixels, or a JPEG of more than 32 scans (checked from the header and markers before decoding). The image is re-encoded to a square PNG (the centre, at most 512x512, a JPEG's EXIF orientation applied): no metadata survives. The previous avatar's file is deleted. " +
			"503 with Retry-After when too many images are being processed, when processing this one takes longer than TUXLAB_AVATAR_DECODE_TIMEOUT, or while the server shuts down."}
	docDeleteAvatar = op{tag: "profile", summary: "Remove your avatar (its file is deleted)", status: 200, result: "Profile",
		desc: "Without an avatar it changes nothing and still answers 200."}
	docAvatar = op{tag: "profile", summary: "An avatar file (public): image/png", status: 200, result: "", errors: []int{404},
		pathParams: []param{{name: "name", schema: map[string]any{"type": "string", "pattern": `^[0-9a-f]{32}\.png$`}, desc: "The file name, as in a profile's avatar_url."}},
		desc:       "Served with X-Content-Type-Options: nosniff and a year's Cache-Control: names are random and never reused. Anything else is 404."}
)
