// Package auth provides tuxlab's users: registration and login, bearer tokens,
// the per-request identity checks, rate limits on credential routes, and the
// admin operations on accounts.
package auth

import (
	"context"
	"net/mail"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"tuxlab/internal/actor"
	"tuxlab/internal/errs"
)

// Role is what a user may do. Registrations are always students; only an
// admin changes a role. It is actor.Role, so a user's role becomes an
// actor.Actor without conversion.
type Role = actor.Role

// The roles of the contract.
const (
	RoleStudent    = actor.Student
	RoleInstructor = actor.Instructor
	RoleAdmin      = actor.Admin
)

// Roles lists every role, lowest privilege first.
var Roles = []Role{RoleStudent, RoleInstructor, RoleAdmin}

// ParseRole returns the role named s, or false.
func ParseRole(s string) (Role, bool) {
	for _, r := range Roles {
		if string(r) == s {
			return r, true
		}
	}
	return "", false
}

// User is an account. PasswordHash stays inside the server: no response type carries it.
type User struct {
	ID                int64
	Username          string
	Email             string
	PasswordHash      string `json:"-"`
	Role              Role
	IsActive          bool
	PasswordChangedAt time.Time  // tokens issued before it are refused
	TokensRevokedAt   *time.Time // logout: tokens issued at or before it are refused
	MFAEnabledAt      *time.Time // when two-factor sign-in was turned on; nil while off
	EmailVerifiedAt   *time.Time // when the address was confirmed by mail; nil while not (docs/accounts.md)
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// IsActiveAdmin reports whether u counts towards the "last active admin" rule.
func (u *User) IsActiveAdmin() bool { return u.Role == RoleAdmin && u.IsActive }

// UserFilter selects and pages users for listing.
type UserFilter struct {
	Role   Role // empty for all
	Offset int
	Limit  int
}

// UserStats counts accounts for the admin statistics.
type UserStats struct {
	Total    int          `json:"total"`
	Active   int          `json:"active"`
	Inactive int          `json:"inactive"`
	ByRole   map[Role]int `json:"by_role"`
}

// UserChange is applied by UserStore.UpdateUser inside its transaction. It may
// modify u and returns an error to abort. activeAdmins is the number of active
// admins, counted under the same transaction, so the last-admin rule holds
// against concurrent changes.
type UserChange func(u *User, activeAdmins int) error

// UserStore keeps users. Lookups of a missing user return an errs.NotFound error;
// a duplicate username or e-mail returns ErrUsernameTaken or ErrEmailTaken.
type UserStore interface {
	CreateUser(ctx context.Context, u *User) error
	FindUserByID(ctx context.Context, id int64) (*User, error)
	// FindUserForRequest returns user id for the identity check of a
	// request, without its password hash. It may answer from a cache, which
	// must show every change made through any store on the same database to
	// the next request, or within a bound the store documents.
	FindUserForRequest(ctx context.Context, id int64) (*User, error)
	FindUserByUsername(ctx context.Context, username string) (*User, error)
	FindUsers(ctx context.Context, f UserFilter) (users []*User, total int, err error)
	UpdateUser(ctx context.Context, id int64, change UserChange) (*User, error)
	DeleteUser(ctx context.Context, id int64, check UserChange) error
	CountUsers(ctx context.Context) (UserStats, error)
	// AfterCommit runs fn once the transaction ctx carries has committed (at
	// once without one): side effects of a change wait for it.
	AfterCommit(ctx context.Context, fn func())
}

// Errors with fixed details from the contract and DECISIONS.md.
var (
	ErrUsernameTaken = errs.E(errs.Conflict, "Username already registered")
	ErrEmailTaken    = errs.E(errs.Conflict, "Email already registered")
	ErrUserNotFound  = errs.E(errs.NotFound, "User not found")
	ErrLastAdmin     = errs.E(errs.Conflict, "Cannot remove the last active admin")
)

// Limits on account fields.
const (
	MinUsernameLen = 3
	MaxUsernameLen = 32
	MinPasswordLen = 8
	MaxPasswordLen = 72 // bcrypt ignores bytes past 72, so longer passwords are refused
	MaxEmailLen    = 254
)

var usernamePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)

// ValidateUsername checks the username rules; loc is where the field sits in the request.
func ValidateUsername(f *errs.Fields, loc []any, username string) {
	n := utf8.RuneCountInString(username)
	switch {
	case n < MinUsernameLen || n > MaxUsernameLen:
		f.Add(loc, "Username must be 3 to 32 characters long", "string_length")
	case !usernamePattern.MatchString(username):
		f.Add(loc, "Username must start with a letter and contain only letters, digits, '.', '_' and '-'", "string_pattern_mismatch")
	}
}

// ValidatePassword checks the password rules.
func ValidatePassword(f *errs.Fields, loc []any, password, username string) {
	switch {
	case len(password) < MinPasswordLen:
		f.Add(loc, "Password must be at least 8 characters long", "string_too_short")
	case len(password) > MaxPasswordLen:
		f.Add(loc, "Password must be at most 72 bytes long", "string_too_long")
	case strings.TrimSpace(password) == "":
		f.Add(loc, "Password must not be only spaces", "value_error")
	case username != "" && strings.EqualFold(password, username):
		f.Add(loc, "Password must not be the same as the username", "value_error")
	}
}

// reservedTLDs are special-use or reserved top-level names (RFC 2606, 6761, 6762,
// 7686, 9476 and ICANN's .internal) where no mail can be delivered.
var reservedTLDs = map[string]bool{
	"test": true, "invalid": true, "localhost": true, "local": true, "example": true,
	"onion": true, "arpa": true, "internal": true, "alt": true, "localdomain": true,
}

// reservedDomains are second-level names reserved for documentation (RFC 2606).
var reservedDomains = map[string]bool{"example.com": true, "example.net": true, "example.org": true}

var tldPattern = regexp.MustCompile(`^[a-z]{2,63}$`)

var domainLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// NormalizeEmail validates an e-mail address and returns its canonical, lower-case form.
func NormalizeEmail(f *errs.Fields, loc []any, email string) string {
	email = strings.TrimSpace(email)
	bad := func(msg string) string { f.Add(loc, msg, "value_error"); return "" }
	if email == "" || len(email) > MaxEmailLen {
		return bad("value is not a valid email address: it must be 1 to 254 characters")
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email || addr.Name != "" {
		return bad("value is not a valid email address: it must look like name@domain.tld")
	}
	local, domain, _ := strings.Cut(strings.ToLower(email), "@")
	if local == "" || strings.ContainsAny(local, "\"\\ ") {
		return bad("value is not a valid email address: the part before @ is not allowed")
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return bad("value is not a valid email address: the domain must have a dot in it")
	}
	for _, l := range labels {
		if !domainLabel.MatchString(l) {
			return bad("value is not a valid email address: the domain is not a valid host name")
		}
	}
	tld := labels[len(labels)-1]
	if reservedTLDs[tld] || reservedDomains[strings.Join(labels[len(labels)-2:], ".")] || strings.HasSuffix(domain, ".home.arpa") {
		return bad("value is not a valid email address: the domain name " + domain + " is a special-use or reserved name that cannot receive mail")
	}
	if !tldPattern.MatchString(tld) {
		return bad("value is not a valid email address: the top-level domain is not valid")
	}
	return local + "@" + domain
}
