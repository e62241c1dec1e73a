package httpapi

import (
	"cmp"
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"tuxlab/internal/auth"
)

// op documents one route for the OpenAPI document.
type op struct {
	summary string
	tag     string
	params  []param // query parameters; path parameters are derived from the path
	body    string  // name of the JSON request body schema, if any
	// alsoYAML: the body may come as YAML too; optionalBody: it may be left out.
	alsoYAML, optionalBody bool
	text                   textBody // a Markdown request body, if any
	form                   string   // name of a multipart/form-data request body schema, if any
	pathParams             []param  // path parameters that are not positive integer ids
	status                 int      // success status
	result                 string   // name of the success body schema ("" for none)
	media                  string   // the success body's media type when it is not JSON (then a string, result unused)
	also                   int      // another success status with the same body, if any
	paged                  bool     // sets X-Total-Count and Link
	errors                 []int    // statuses beyond those implied by access, parameters and body
	desc                   string
}

// textBody says whether an operation takes lesson text as its body.
type textBody int

const (
	noText       textBody = iota
	optionalText          // Markdown body may be empty
	requiredText          // Markdown body is required
)

// param is a query parameter, or a header one when in is "header".
type param struct {
	in       string // "" for "query"
	name     string
	schema   map[string]any
	required bool
	desc     string
}

var (
	nullableTS = map[string]any{"oneOf": []any{tsSchema, map[string]any{"type": "null"}}}
	strSchema  = map[string]any{"type": "string"}
	intSchema  = map[string]any{"type": "integer"}
	boolSchema = map[string]any{"type": "boolean"}
	roleSchema = map[string]any{"type": "string", "enum": []string{"student", "instructor", "admin"}}
	tsSchema   = map[string]any{"type": "string", "format": "date-time", "pattern": `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`}
	// passwordSchema is auth.ValidatePassword's rule. Its bounds are bytes of
	// UTF-8 (bcrypt reads 72 bytes), which JSON Schema cannot count: maxLength
	// (characters) is a true upper bound, and the lower one is left to the text,
	// as 8 bytes may be as few as 2 characters.
	passwordSchema = map[string]any{"type": "string", "maxLength": auth.MaxPasswordLen,
		"description": "8 to 72 bytes of UTF-8, not characters: a character outside ASCII takes 2 to 4 bytes (bcrypt reads 72 bytes, so a longer password is refused, never cut). Not only spaces, and not the username."}
)

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

// ownerIDSchema and publishedSchema describe who owns authored content and
// whether learners see it.
var (
	ownerIDSchema = map[string]any{"type": []string{"integer", "null"},
		"description": "The user who created it; null for the system's content (bundled or imported without an owner), which only admins change."}
	publishedSchema = map[string]any{"type": "boolean",
		"description": "Learners see published content only; a draft (false) is seen by its owner and admins, and is 404 to everyone else."}
	bodyPublishedSchema = map[string]any{"type": "boolean",
		"description": "The same as the query parameter published (which see); when both are sent they must agree (422 otherwise)."}
	publishedParam = param{name: "published", schema: boolSchema,
		desc: "true publishes, false makes a draft. On create, absent: published when an admin creates it, a draft when an instructor does."}
)

func obj(required []string, props map[string]any) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func arrayOf(items map[string]any) map[string]any {
	return map[string]any{"type": "array", "items": items}
}

var pageParams = []param{
	{name: "page", schema: map[string]any{"type": "integer", "minimum": 1, "default": 1}, desc: "Page number, from 1."},
	{name: "page_size", schema: map[string]any{"type": "integer", "minimum": 1, "maximum": maxPageSize, "default": defaultPageSize}, desc: "Items per page."},
}

// schemas are the components every operation refers to.
var schemas = map[string]any{
	"Error":   obj([]string{"detail"}, map[string]any{"detail": strSchema}),
	"Message": obj([]string{"detail"}, map[string]any{"detail": strSchema}),
	"ValidationError": obj([]string{"detail"}, map[string]any{"detail": arrayOf(obj([]string{"loc", "msg", "type"}, map[string]any{
		"loc":  arrayOf(map[string]any{"type": []string{"string", "integer"}}),
		"msg":  strSchema,
		"type": strSchema,
	}))}),
	"User": obj([]string{"id", "username", "email", "role", "is_active", "created_at"}, map[string]any{
		"id": intSchema, "username": strSchema, "email": map[string]any{"type": "string", "format": "email"},
		"role": roleSchema, "is_active": boolSchema, "created_at": tsSchema,
	}),
	"UserList": arrayOf(ref("User")),
	"RegisterRequest": obj([]string{"username", "email", "password"}, map[string]any{
		"username": map[string]any{"type": "string", "minLength": 3, "maxLength": 32, "pattern": "^[A-Za-z][A-Za-z0-9_.-]*$"},
		"email":    map[string]any{"type": "string", "format": "email", "maxLength": 254},
		"password": passwordSchema,
	}),
	"CreateUserRequest": obj([]string{"username", "email", "password"}, map[string]any{
		"username": strSchema, "email": strSchema, "password": passwordSchema, "role": roleSchema}),
	"LoginRequest": obj([]string{"username", "password"}, map[string]any{"username": strSchema, "password": strSchema}),
	"Token": obj([]string{"access_token", "token_type"}, map[string]any{
		"access_token": strSchema, "token_type": map[string]any{"const": "bearer"},
	}),
	"MarkdownBody": obj([]string{"markdown"}, map[string]any{"markdown": strSchema}),
	"Progress":     obj([]string{"completed", "total"}, map[string]any{"completed": intSchema, "total": intSchema}),
	"ThemeSummary": obj([]string{"id", "slug", "title", "order_index", "estimated_minutes", "completed", "owner_id", "published"}, map[string]any{
		"id": intSchema, "slug": strSchema, "title": strSchema, "order_index": intSchema, "estimated_minutes": intSchema, "completed": boolSchema,
		"owner_id": ownerIDSchema, "published": publishedSchema,
	}),
	"Module": obj([]string{"id", "slug", "title", "name", "description", "order_index", "themes", "progress", "owner_id", "published"}, map[string]any{
		"id": intSchema, "slug": strSchema, "title": strSchema, "owner_id": ownerIDSchema, "published": publishedSchema,
		"name":        map[string]any{"type": "string", "description": "The same value as title: the contract lists modules by title and lets admins set a name."},
		"description": strSchema, "order_index": intSchema, "themes": arrayOf(ref("ThemeSummary")),
		"progress": ref("Progress"),
	}),
	"ModuleList": arrayOf(ref("Module")),
	"Theme": obj([]string{"id", "slug", "module_id", "title", "order_index", "estimated_minutes", "completed", "completed_at", "previous_theme_id", "next_theme_id",
		"owner_id", "published"}, map[string]any{
		"id": intSchema, "slug": strSchema, "module_id": intSchema, "title": strSchema, "order_index": intSchema,
		"owner_id": ownerIDSchema, "published": publishedSchema,
		"estimated_minutes": intSchema, "completed": boolSchema,
		"completed_at":      map[string]any{"oneOf": []any{tsSchema, map[string]any{"type": "null"}}},
		"previous_theme_id": map[string]any{"type": []string{"integer", "null"}, "description": "The theme before this one in curriculum order, across modules."},
		"next_theme_id":     map[string]any{"type": []string{"integer", "null"}, "description": "The theme after this one in curriculum order, across modules."},
	}),
	"ThemeContent": obj([]string{"theme_id", "format", "markdown", "html", "updated_at"}, map[string]any{
		"theme_id": intSchema, "format": map[string]any{"const": "markdown"},
		"markdown":   map[string]any{"type": "string", "description": "The lesson source."},
		"html":       map[string]any{"type": "string", "description": "The lesson rendered from Markdown and sanitised: no raw HTML, scripts or event handlers survive."},
		"updated_at": tsSchema,
	}),
	"Completion": obj([]string{"theme_id", "completed", "completed_at"}, map[string]any{
		"theme_id": intSchema, "completed": map[string]any{"const": true}, "completed_at": tsSchema,
	}),
	"Template": obj([]string{"id", "name", "description", "kind", "image", "limits", "network", "runtime", "user", "shell", "cap_add", "no_new_privileges", "extra_disks_mb"}, map[string]any{
		"id": intSchema, "name": strSchema, "description": strSchema,
		"kind":           kindSchema,
		"image":          map[string]any{"type": "string", "description": "Image reference; tuxlab's own images are built locally by scripts/build-images.sh. A machine's names a machine image (current: the newest scripts/build-machine-image.sh made)."},
		"extra_disks_mb": map[string]any{"type": "array", "items": intSchema, "description": "Machines only: the sizes in MiB of the blank disks besides the root disk (vdb, vdc, ...). Empty for containers."},
		"limits": obj([]string{"memory_mb", "cpus", "cpu_millis", "pids_limit", "disk_mb"}, map[string]any{
			"memory_mb": intSchema, "cpus": map[string]any{"type": "number"}, "cpu_millis": intSchema, "pids_limit": intSchema,
			"disk_mb": map[string]any{"type": "integer", "description": "Writable space in MiB; 0: the host default (TUXLAB_SANDBOX_DISK_MB)."},
		}),
		"network":           map[string]any{"type": "boolean", "description": "false: no network; true: an internal network between sandboxes with no route out."},
		"runtime":           map[string]any{"type": "string", "description": "Empty for the engine's default (runc), or runsc (gVisor)."},
		"user":              strSchema,
		"shell":             arrayOf(strSchema),
		"cap_add":           map[string]any{"type": "array", "items": strSchema, "description": "Capabilities kept; all others are dropped."},
		"no_new_privileges": boolSchema,
	}),
	"TemplateList": arrayOf(ref("Template")),
	"CreateContainerRequest": obj([]string{"template_id"}, map[string]any{
		"template_id": intSchema, "name": map[string]any{"type": "string", "maxLength": 64, "description": "Defaults to the template's name."},
	}),
	"Container": obj([]string{"id", "name", "template_id", "kind", "user_id", "status", "status_detail", "created_at", "started_at", "stopped_at", "expires_at", "last_activity_at", "idle_stop_at", "terminal_url"}, map[string]any{
		"id": intSchema, "name": strSchema, "template_id": intSchema, "user_id": intSchema, "kind": kindSchema,
		"status":           map[string]any{"type": "string", "enum": []string{"creating", "running", "stopped", "error"}},
		"status_detail":    map[string]any{"type": "string", "description": "Why a sandbox stopped or broke, in words for the learner."},
		"created_at":       tsSchema,
		"started_at":       nullableTS,
		"stopped_at":       nullableTS,
		"expires_at":       map[string]any{"type": "string", "description": "The maximum lifetime: the sandbox is removed then.", "pattern": tsSchema["pattern"]},
		"last_activity_at": tsSchema,
		"idle_stop_at":     map[string]any{"oneOf": []any{tsSchema, map[string]any{"type": "null"}}, "description": "When a running sandbox stops if nothing happens; activity moves it."},
		"terminal_url":     map[string]any{"type": "string", "description": "Path of the terminal WebSocket; add ?token=."},
	}),
	"ContainerList": arrayOf(ref("Container")),
	"Deleted":       obj([]string{"detail", "id"}, map[string]any{"detail": strSchema, "id": intSchema}),
	"AdminStats": obj([]string{"users", "lessons", "sandboxes", "learning"}, map[string]any{
		"learning": ref("LearningStats"),
		"sandboxes": obj([]string{"containers", "running", "templates", "engine_available"}, map[string]any{
			"containers": intSchema, "running": intSchema, "templates": intSchema, "engine_available": boolSchema,
		}),
		"lessons": obj([]string{"modules", "themes", "completions"}, map[string]any{"modules": intSchema, "themes": intSchema, "completions": intSchema}),
		"users": obj([]string{"total", "active", "inactive", "by_role"}, map[string]any{
			"total": intSchema, "active": intSchema, "inactive": intSchema,
			"by_role": obj([]string{"student", "instructor", "admin"}, map[string]any{"student": intSchema, "instructor": intSchema, "admin": intSchema}),
		}),
	}),
}

var (
	docRegister = op{tag: "auth", summary: "Register a student account", body: "RegisterRequest", status: 201, result: "User",
		errors: []int{409, 429}, desc: "409 `Username already registered` or `Email already registered`. With `TUXLAB_REQUIRE_EMAIL_VERIFICATION` on, the account is created unconfirmed and a confirmation link is mailed in the same transaction: it signs in once the link is opened (POST /api/auth/verify-email). 422 lists every invalid field, including e-mail domains that cannot receive mail (.test, .invalid, .localhost, .local, example.com...). Rate limited per client IP."}
	docLogin = op{tag: "auth", summary: "Log in and get a bearer token", body: "LoginRequest", status: 200, result: "Token",
		errors: []int{401, 403, 429, 503}, desc: "401 for an unknown user or a wrong password alike; 403 `User account is inactive`; with `TUXLAB_REQUIRE_EMAIL_VERIFICATION` on, 403 `Confirm your e-mail address: we sent you a link` for an account whose address is not confirmed yet (both only with the right password; see POST /api/auth/verify-email and /api/auth/resend-verification). Rate limited per client IP and per username (429 with Retry-After). " +
			"For an account with two-factor sign-in on, the right password without `otp` is 401 `Two-factor code required` (ask for the code and send the login again with it); a wrong, expired or already used code is 401 `Incorrect two-factor code`. A code works once; code attempts are limited per account (TUXLAB_AUTH_RATE_USER an hour). See docs/mfa.md. " +
			"With `X-Tuxlab-Session: cookie` (the web interface) the answer also sets the browser session: the token in the HttpOnly cookie `tuxlab_session` and its CSRF proof in the readable cookie `tuxlab_csrf` (both SameSite=Strict, Path=/, Max-Age the token's lifetime, Secure over HTTPS and in production); such a login from another site's page is 403.",
		params: []param{{in: "header", name: sessionHeader, schema: map[string]any{"const": "cookie"},
			desc: "`cookie`: also set the browser session cookies (see cookieAuth)."}}}
	docMe     = op{tag: "auth", summary: "The calling user", status: 200, result: "Me", desc: "With whether two-factor sign-in is on, and whether the install holds the caller back until it is (mfa_setup_required)."}
	docLogout = op{tag: "auth", summary: "Log out: revoke this token and every one issued before it", status: 200, result: "Message",
		desc: "A stolen token is cut off by logging out (or changing the password). Log in again for a new token. Logging out ends the account's sessions on every device, every tab and terminal, and clears the session cookies (Max-Age=0)."}

	docAdminListUsers = op{tag: "admin", summary: "List users, paginated", status: 200, result: "UserList", paged: true,
		params: append([]param{{name: "role", schema: roleSchema, desc: "Only users with this role."}}, pageParams...)}
	docAdminCreateUser = op{tag: "admin", summary: "Create a user (inputs in the query string, or as a JSON body)", status: 201, result: "User", errors: []int{409},
		body: "CreateUserRequest", optionalBody: true,
		desc: "The admin convention is the query string; a JSON body (Content-Type: application/json) keeps the password out of URLs and proxy logs.",
		params: []param{
			{name: "username", schema: strSchema, desc: "Required without a JSON body."},
			{name: "email", schema: strSchema, desc: "Required without a JSON body."},
			{name: "password", schema: passwordSchema, desc: "Required without a JSON body; 8 to 72 bytes of UTF-8."},
			{name: "role", schema: roleSchema, desc: "Defaults to student."},
		}}
	docAdminSetRole = op{tag: "admin", summary: "Change a user's role", status: 200, result: "User", errors: []int{404, 409},
		params: []param{{name: "role", schema: roleSchema, required: true}}, desc: "409 when it would demote the last active admin."}
	docAdminSetActive = op{tag: "admin", summary: "Activate or deactivate a user", status: 200, result: "User", errors: []int{404, 409},
		params: []param{{name: "is_active", schema: boolSchema, required: true}}, desc: "409 when it would deactivate the last active admin."}
	docAdminDeleteUser = op{tag: "admin", summary: "Delete a user", status: 200, result: "Deleted", errors: []int{404, 409},
		desc: "409 when it would delete the last active admin."}
	docModules       = op{tag: "lessons", summary: "Modules in order, each with its ordered themes and the caller's progress", status: 200, result: "ModuleList"}
	docTheme         = op{tag: "lessons", summary: "A theme, its module, its neighbours and whether the caller completed it", status: 200, result: "Theme", errors: []int{404}}
	docThemeContent  = op{tag: "lessons", summary: "A theme's lesson: Markdown and sanitised HTML", status: 200, result: "ThemeContent", errors: []int{404}}
	docThemeComplete = op{tag: "lessons", summary: "Mark a theme completed (idempotent: recorded once, 200 every time)", status: 200, result: "Completion", errors: []int{404}}

	docAdminCreateModule = op{tag: "admin lessons", summary: "Create a module", status: 201, result: "Module", errors: []int{409},
		params: []param{
			{name: "name", schema: strSchema, required: true, desc: "Title of the module."},
			{name: "slug", schema: strSchema, desc: "Stable key for curriculum files; made from the name when absent."},
			{name: "description", schema: strSchema},
			{name: "order_index", schema: intSchema},
			publishedParam,
		}}
	docAdminUpdateModule = op{tag: "admin lessons", summary: "Update a module (only the parameters given change)", status: 200, result: "Module", errors: []int{404, 409},
		params: []param{{name: "name", schema: strSchema}, {name: "description", schema: strSchema}, {name: "order_index", schema: intSchema}, {name: "slug", schema: strSchema}, publishedParam}}
	docAdminDeleteModule = op{tag: "admin lessons", summary: "Delete a module; one with themes needs cascade=true", status: 200, result: "Deleted", errors: []int{404, 409},
		params: []param{{name: "cascade", schema: boolSchema, desc: "Also delete the module's themes and the completions of them."}}}
	docAdminReorderModules = op{tag: "admin lessons", summary: "Reorder all modules", status: 200, result: "ModuleList", errors: []int{409},
		params: []param{{name: "module_ids", schema: strSchema, required: true, desc: "Every module id once, comma-separated, in the new order."}}}
	docAdminReorderThemes = op{tag: "admin lessons", summary: "Reorder the themes of a module", status: 200, result: "Module", errors: []int{404, 409},
		params: []param{{name: "theme_ids", schema: strSchema, required: true, desc: "Every theme id of the module once, comma-separated, in the new order."}}}
	docAdminCreateTheme = op{tag: "admin lessons", summary: "Create a theme; its lesson may come as the body", status: 201, result: "Theme", errors: []int{409}, text: optionalText,
		params: []param{
			{name: "module_id", schema: intSchema, required: true},
			{name: "title", schema: strSchema, required: true},
			{name: "slug", schema: strSchema, desc: "Made from the title when absent."},
			{name: "order_index", schema: intSchema},
			{name: "estimated_minutes", schema: intSchema, desc: "1 to 600, default 10."},
			publishedParam,
		}}
	docAdminUpdateTheme = op{tag: "admin lessons", summary: "Update a theme (only the parameters given change)", status: 200, result: "Theme", errors: []int{404, 409},
		params: []param{{name: "module_id", schema: intSchema}, {name: "title", schema: strSchema}, {name: "slug", schema: strSchema},
			{name: "order_index", schema: intSchema}, {name: "estimated_minutes", schema: intSchema}, publishedParam}}
	docAdminSetThemeContent = op{tag: "admin lessons", summary: "Replace a theme's lesson (the body is the Markdown)", status: 200, result: "ThemeContent", errors: []int{404}, text: requiredText}
	docAdminDeleteTheme     = op{tag: "admin lessons", summary: "Delete a theme and the completions of it", status: 200, result: "Deleted", errors: []int{404}}

	docTemplates       = op{tag: "sandboxes", summary: "Sandbox templates (public): image, limits and hardening", status: 200, result: "TemplateList"}
	docCreateContainer = op{tag: "sandboxes", summary: "Create and start a sandbox from a template", body: "CreateContainerRequest", status: 201, result: "Container", errors: []int{409, 503},
		desc: "409 when the caller's quota of sandboxes or of running sandboxes is reached; 503 `Sandbox runtime unavailable` without an engine, or when the platform is at capacity (with Retry-After)."}
	docListContainers  = op{tag: "sandboxes", summary: "The caller's sandboxes, with their state checked against the engine", status: 200, result: "ContainerList", errors: []int{503}}
	docGetContainer    = op{tag: "sandboxes", summary: "One of the caller's sandboxes (another user's is 404)", status: 200, result: "Container", errors: []int{404, 503}}
	docStartContainer  = op{tag: "sandboxes", summary: "Start a stopped sandbox (a running one stays running)", status: 200, result: "Container", errors: []int{404, 409, 503}}
	docStopContainer   = op{tag: "sandboxes", summary: "Stop a running sandbox (its files are kept)", status: 200, result: "Container", errors: []int{404, 503}}
	docDeleteContainer = op{tag: "sandboxes", summary: "Delete a sandbox and its container", status: 200, result: "Deleted", errors: []int{404, 503}}
	docTerminal        = op{tag: "sandboxes", summary: "Terminal WebSocket: a shell with a TTY in the caller's running sandbox", status: 101, errors: []int{401, 403, 404, 409, 426, 503},
		params: []param{
			{name: "token", schema: strSchema, desc: "The access token, for clients that can set no header and hold no session cookie. The web interface sends none: its browser sends the session cookie on the handshake, which is then refused (4403) unless its Origin is this site or one listed in TUXLAB_CORS_ORIGINS."},
			{name: "cols", schema: map[string]any{"type": "integer", "minimum": 1, "maximum": 1000, "default": 80}, desc: "Initial width: the terminal has it before the shell starts."},
			{name: "rows", schema: map[string]any{"type": "integer", "minimum": 1, "maximum": 1000, "default": 24}, desc: "Initial height."},
			{name: "session", schema: strSchema, desc: "The id of a terminal session of the caller's on this sandbox (from its session message): reattach to that shell, its output replayed. An unknown, ended or foreign id opens a new shell."},
			{name: "record", schema: boolSchema, desc: "true records a new free-play shell (docs/terminal.md, \"Recordings\"). The terminal of a lab or exam attempt in progress is always recorded, whatever this says; a reattach keeps the session's choice."},
		},
		desc: "Binary frames carry raw terminal bytes both ways. Text frames carry JSON control messages: from the client {\"type\":\"resize\",\"cols\":N,\"rows\":N} and {\"type\":\"close\"} (hang up now); from the server first {\"type\":\"session\",\"id\":\"...\",\"grace\":N} (with \"recording\":true when the session is recorded), then {\"type\":\"exit\",\"code\":N}, {\"type\":\"detached\",\"reason\":\"elsewhere\"} (another socket took the session over: the socket closes with 4000), {\"type\":\"error\",\"detail\":\"...\"} (the session goes on), {\"type\":\"error\",\"detail\":\"...\",\"status\":N} (the terminal ends: the socket closes with code 4000+N and the detail as reason) {\"type\":\"expiring\",\"reason\":\"idle\"|\"lifetime\",\"seconds\":N} and {\"type\":\"watchers\",\"watchers\":[{\"share_id\":N,\"name\":\"...\",\"typing\":false}]} (who watches through a share, when that changes and on attach; see /ws/watch). A socket that drops (any close but 1000) leaves its shell running for TUXLAB_TERMINAL_GRACE for a reattach; the close message or a 1000 close hangs up at once. " +
			"A WebSocket upgrade is always accepted (101): a check that fails before the shell starts (the statuses listed here) is then told as that error message and close code, since a browser sees nothing of a refused upgrade. Any other request gets those failures as plain HTTP errors, and 426 when every check passes. See docs/terminal.md."}

	docPortForward = op{tag: "sandboxes", summary: "Port-forward WebSocket: one TCP connection to a port of the caller's running sandbox", status: 101, errors: []int{401, 403, 404, 409, 426, 429, 503},
		pathParams: []param{{name: "port", schema: map[string]any{"type": "integer", "minimum": 1, "maximum": 65535}, desc: "The TCP port on the sandbox's loopback interface."}},
		params:     []param{{name: "token", schema: strSchema, desc: "The access token, for clients that can set no header (as on the terminal)."}},
		desc: "Binary frames carry the connection's bytes both ways (frames of at most 1 MiB from the client); the socket closes normally (1000) when the service closes its side, and the connection closes when the socket does. The connection is made inside the sandbox by the trusted tools (docs/preview.md): the sandbox's network stays closed. Only the sandbox's owner may open it, at most 16 connections per sandbox at once (429 beyond). " +
			"As on the terminal, a WebSocket upgrade is always accepted (101) and a check that fails is told as the close code 4000+status with the detail as reason; any other request gets the failures as plain HTTP errors, and 426 when every check passes. tuxlab port-forward uses it (docs/cli.md)."}

	docAdminListContainers = op{tag: "admin", summary: "Every user's sandboxes, paginated", status: 200, result: "ContainerList", paged: true, params: pageParams}
	docAdminCreateTemplate = op{tag: "admin", summary: "Create a sandbox template (inputs in the query string)", status: 201, result: "Template", errors: []int{409}, params: templateParams(true)}
	docAdminUpdateTemplate = op{tag: "admin", summary: "Update a sandbox template (only the parameters given change)", status: 200, result: "Template", errors: []int{404, 409}, params: templateParams(false)}
	docAdminDeleteTemplate = op{tag: "admin", summary: "Delete a sandbox template no sandbox uses", status: 200, result: "Deleted", errors: []int{404, 409}}

	docAdminStats = op{tag: "admin", summary: "System statistics", status: 200, result: "AdminStats"}
)

// errorHeaders are the headers writeError sets on an error status.
var errorHeaders = map[int]map[string]any{
	http.StatusUnauthorized: {"WWW-Authenticate": map[string]any{"required": true, "schema": map[string]any{"const": "Bearer"},
		"description": "The scheme a token must come in: Authorization: Bearer <token>."}},
	http.StatusTooManyRequests: {"Retry-After": map[string]any{"required": true, "schema": map[string]any{"type": "integer", "minimum": 1},
		"description": "Seconds to wait before trying again."}},
	http.StatusServiceUnavailable: {"Retry-After": map[string]any{"required": false, "schema": map[string]any{"type": "integer", "minimum": 1},
		"description": "Seconds to wait before trying again, when the wait is known (at capacity, busy, shutting down); absent when an operator must act (an image missing on the host)."}},
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// responseCodes lists every status an operation documents.
func (rt route) responseCodes() []int {
	codes := map[int]bool{rt.doc.status: true}
	if rt.doc.also != 0 {
		codes[rt.doc.also] = true
	}
	if rt.access != public {
		codes[401], codes[403] = true, true
	}
	if rt.doc.body != "" || rt.doc.text != noText || rt.doc.form != "" {
		codes[413], codes[422] = true, true
	}
	if rt.doc.body != "" {
		codes[415] = true // a body that does not say it is JSON (or YAML where alsoYAML)
	}
	if len(rt.doc.params) > 0 || pathParam.MatchString(rt.path) {
		codes[422] = true
	}
	for _, c := range rt.doc.errors {
		codes[c] = true
	}
	out := make([]int, 0, len(codes))
	for c := range codes {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

// authorAccessDesc heads the description of every authoring route.
const authorAccessDesc = "**Instructors and admins.** An instructor creates content (a draft unless `published=true`) and changes or deletes only what they own: " +
	"another author's item answers 403 with a detail saying so; an admin changes everything; a student gets 403. See docs/api-decisions.md, \"Instructors author their own content\"."

// cookieAuthDesc describes the browser session as a security scheme.
const cookieAuthDesc = "The web interface's session: `POST /api/auth/login` with `X-Tuxlab-Session: cookie` sets the access token in this HttpOnly, SameSite=Strict cookie, which the browser then sends by itself. " +
	"A bearer header, when sent, is used instead. Requests authenticated by the cookie must come from this site's pages (an `Origin` of this host or one listed in TUXLAB_CORS_ORIGINS, never through `*`; no `Sec-Fetch-Site: cross-site`), " +
	"and every POST, PUT, PATCH and DELETE must carry the header `X-CSRF-Token` with the value of the readable cookie `tuxlab_csrf`: otherwise 403. `POST /api/auth/logout` clears both cookies."

// openAPIDocument renders the route table as an OpenAPI 3.1 document.
func (s *Server) openAPIDocument() []byte {
	paths := map[string]map[string]any{}
	for _, rt := range s.routes {
		o := map[string]any{
			"summary":     rt.doc.summary,
			"operationId": operationID(rt),
			"tags":        []string{rt.doc.tag},
		}
		if rt.doc.desc != "" {
			o["description"] = rt.doc.desc
		}
		o["x-tuxlab-access"] = rt.access.accessName()
		if rt.access == author {
			o["description"] = strings.TrimSpace(authorAccessDesc + "\n\n" + rt.doc.desc)
		}
		o["security"] = []any{} // public: no token
		if rt.access != public {
			o["security"] = []any{map[string]any{"bearer": []string{}}, map[string]any{"cookieAuth": []string{}}}
		}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(rt.path, -1) {
			pm := map[string]any{"name": m[1], "in": "path", "required": true,
				"schema": map[string]any{"type": "integer", "minimum": 1}}
			for _, p := range rt.doc.pathParams {
				if p.name == m[1] {
					pm["schema"], pm["description"] = p.schema, p.desc
				}
			}
			params = append(params, pm)
		}
		for _, p := range rt.doc.params {
			pm := map[string]any{"name": p.name, "in": cmp.Or(p.in, "query"), "required": p.required, "schema": p.schema}
			if p.desc != "" {
				pm["description"] = p.desc
			}
			params = append(params, pm)
		}
		if len(params) > 0 {
			o["parameters"] = params
		}
		if rt.doc.body != "" {
			content := map[string]any{"application/json": map[string]any{"schema": ref(rt.doc.body)}}
			if rt.doc.alsoYAML {
				content["application/yaml"] = map[string]any{"schema": ref(rt.doc.body)}
			}
			o["requestBody"] = map[string]any{"required": !rt.doc.optionalBody, "content": content}
		}
		if rt.doc.form != "" {
			o["requestBody"] = map[string]any{"required": true, "content": map[string]any{
				"multipart/form-data": map[string]any{"schema": ref(rt.doc.form)}}}
		}
		if rt.doc.text != noText {
			o["requestBody"] = map[string]any{"required": rt.doc.text == requiredText,
				"description": "The lesson as Markdown: the raw text (text/markdown or text/plain), or JSON {\"markdown\": \"...\"}. At most 256 KiB.",
				"content": map[string]any{
					"text/markdown":    map[string]any{"schema": strSchema},
					"text/plain":       map[string]any{"schema": strSchema},
					"application/json": map[string]any{"schema": ref("MarkdownBody")},
				}}
		}
		responses := map[string]any{}
		for _, code := range rt.responseCodes() {
			resp := map[string]any{"description": http.StatusText(code)}
			schema := "Error"
			switch {
			case code == rt.doc.status || code == rt.doc.also:
				schema = rt.doc.result // "" for no body, as for 101
				if rt.doc.paged {
					resp["headers"] = map[string]any{
						"X-Total-Count": map[string]any{"required": true, "schema": intSchema, "description": "Items in all pages."},
						"Link":          map[string]any{"required": true, "schema": strSchema, "description": "RFC 8288 links: first, prev, next, last."},
					}
				}
			case code == 422:
				schema = "ValidationError"
			}
			if h := errorHeaders[code]; h != nil {
				resp["headers"] = h
			}
			switch {
			case code == rt.doc.status && rt.doc.media != "":
				resp["content"] = map[string]any{rt.doc.media: map[string]any{"schema": strSchema}}
			case schema != "":
				resp["content"] = map[string]any{"application/json": map[string]any{"schema": ref(schema)}}
			}
			responses[strconv.Itoa(code)] = resp
		}
		o["responses"] = responses
		if paths[rt.path] == nil {
			paths[rt.path] = map[string]any{}
		}
		paths[rt.path][lower(rt.method)] = o
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"servers": []any{map[string]any{"url": "/", "description": "The server that serves this document."}},
		"info": map[string]any{
			"title":       "tuxlab API",
			"version":     s.version,
			"description": "Learn Linux system administration by doing. Errors are {\"detail\": string}, or for 422 {\"detail\": [{loc, msg, type}]}. JSON request bodies need Content-Type: application/json (or application/...+json; a charset, if given, utf-8): any other or none is 415. Timestamps are UTC YYYY-MM-DDTHH:MM:SSZ. Lists are bare arrays; paginated lists carry X-Total-Count and Link headers.",
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{
				"bearer":     map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
				"cookieAuth": map[string]any{"type": "apiKey", "in": "cookie", "name": sessionCookie, "description": cookieAuthDesc},
			},
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // the document is built from literals: a failure is a programming error
	}
	return b
}

func operationID(rt route) string {
	id := lower(rt.method)
	for _, part := range regexp.MustCompile(`[^A-Za-z0-9]+`).Split(rt.path, -1) {
		if part != "" && part != "api" {
			id += "_" + part
		}
	}
	return id
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.openapi)
}

// OpenAPI returns the document, for tests and tools.
func (s *Server) OpenAPI() []byte { return s.openapi }

// kindSchema is a sandbox's kind.
var kindSchema = map[string]any{"type": "string", "enum": []string{"container", "machine"},
	"description": "container: shares the host's kernel; machine: a virtual machine with its own kernel, systemd as PID 1, blank disks and a reboot (docs/machines.md)."}

func templateParams(create bool) []param {
	return []param{
		{name: "name", schema: strSchema, required: create},
		{name: "image", schema: strSchema, required: create},
		{name: "kind", schema: map[string]any{"type": "string", "enum": []string{"container", "machine"}}, desc: "container (default) or machine. A machine's memory_mb, cpu_millis (whole CPUs), disk_mb (its root disk) and extra_disks_mb are bounded by the host (422 beyond); pids_limit, cap_add and no_new_privileges do not apply to it."},
		{name: "extra_disks_mb", schema: strSchema, desc: "Machines only: comma-separated sizes in MiB of blank disks (at most 4 by default, 16 to 8192 MiB each), e.g. 1024,1024."},
		{name: "description", schema: strSchema},
		{name: "memory_mb", schema: intSchema, desc: "16 to 65536."},
		{name: "cpu_millis", schema: intSchema, desc: "Thousandths of a CPU, 50 to 64000."},
		{name: "pids_limit", schema: intSchema, desc: "16 to 32768."},
		{name: "disk_mb", schema: intSchema, desc: "Writable space in MiB; 0 for the host default. Applied by the engine where its storage driver has quotas, by tuxlab's disk watch elsewhere."},
		{name: "network", schema: boolSchema},
		{name: "runtime", schema: map[string]any{"type": "string", "enum": []string{"", "runc", "runsc"}}},
		{name: "user", schema: strSchema},
		{name: "shell", schema: strSchema, desc: "The terminal's command, space-separated, e.g. /bin/bash -l."},
		{name: "cap_add", schema: strSchema, desc: "Comma-separated capabilities to keep, from an allow-list."},
		{name: "no_new_privileges", schema: boolSchema},
	}
}
