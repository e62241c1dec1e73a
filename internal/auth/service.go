package auth

import (
	"cmp"
	"context"
	"strings"
	"sync"
	"time"

	"tuxlab/internal/errs"
)

// Errors of the per-request checks, with the contract's details.
var (
	ErrNotAuthenticated = errs.E(errs.Unauthenticated, "Not authenticated")
	ErrInvalidToken     = errs.E(errs.Unauthenticated, "Could not validate credentials")
	ErrTokenUserGone    = errs.E(errs.Unauthenticated, "User not found")
	ErrInactive         = errs.E(errs.Forbidden, "User account is inactive")
	ErrAdminRequired    = errs.E(errs.Forbidden, "Admin access required")
	ErrBadCredentials   = errs.E(errs.Unauthenticated, "Incorrect username or password")
	// Why a user's open sessions end (see Sessions).
	ErrPasswordChanged = errs.E(errs.Unauthenticated, "The password of this account changed: sign in again")
	ErrLoggedOut       = errs.E(errs.Unauthenticated, "You logged out: sign in again")
)

// Sessions ends what a user keeps open beyond single requests (terminals)
// once the user's access ends: deactivation, deletion, a password change, a
// logout. why is an *errs.Error whose detail the user may read. CloseUser
// must not block on the sessions it ends.
type Sessions interface {
	CloseUser(userID int64, why error)
}

type noSessions struct{}

func (noSessions) CloseUser(int64, error) {}

// Options tune a Service.
type Options struct {
	Secret             []byte
	TokenTTL           time.Duration
	AuthPerIPPerMinute int
	LoginPerUserPerMin int
	BcryptWorkers      int
	// BcryptCost is the cost of new hashes: 0 for BcryptCost (12). Only
	// tests lower it, through config.Config.BcryptCost, which no
	// environment variable sets.
	BcryptCost int
	Now        func() time.Time // nil for time.Now
	// LimitsNow is the clock of the rate limits (nil for Now); tests move
	// it past a limit's window without moving the tokens' clock.
	LimitsNow func() time.Time
	// Sessions are ended when a user's access ends (nil: none to end).
	Sessions Sessions
	// MFA keeps two-factor state; required by every two-factor method and
	// by the login of a user who turned it on.
	MFA MFAStore
	// TOTPNow is the clock two-factor codes are checked against (nil for
	// Now); tests step it by 30 seconds instead of waiting.
	TOTPNow func() time.Time
}

// Service is the auth domain: it owns the rules on accounts and credentials.
type Service struct {
	users   UserStore
	hasher  *Hasher
	tokens  *Tokens
	perIP   *RateLimiter
	perUser *RateLimiter // per account and client address
	// perAccount is a slower ceiling per account from anywhere: ten times the
	// per-client budget, so nobody can lock an account out from one address,
	// and a guess from many addresses is still bounded.
	perAccount *RateLimiter
	// perChange limits password changes per account (user id) as perUser
	// limits logins: each checks the current password, a guess.
	perChange *RateLimiter
	known     *knownClients
	sessions  Sessions
	now       func() time.Time
	// Two-factor sign-in (mfa.go): its store, the per-account limit on code
	// attempts, the install's rule and the clock of the codes.
	mfa      MFAStore
	perCode  *RateLimiter
	required requiredCache
	totpNow  func() time.Time
	// verify is e-mail verification on registration (verify.go); nil while
	// TUXLAB_REQUIRE_EMAIL_VERIFICATION is off.
	verify *Verifications
}

// NewService returns a Service over users.
func NewService(users UserStore, o Options) *Service {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	sessions := o.Sessions
	if sessions == nil {
		sessions = noSessions{}
	}
	limitsNow := o.LimitsNow
	if limitsNow == nil {
		limitsNow = now
	}
	totpNow := o.TOTPNow
	if totpNow == nil {
		totpNow = now
	}
	return &Service{
		users:      users,
		hasher:     NewHasher(cmp.Or(o.BcryptCost, BcryptCost), o.BcryptWorkers, 64),
		tokens:     NewTokens(o.Secret, o.TokenTTL, now),
		perIP:      NewRateLimiter(o.AuthPerIPPerMinute, limitsNow),
		perUser:    NewRateLimiter(o.LoginPerUserPerMin, limitsNow),
		perAccount: NewRateLimiter(10*o.LoginPerUserPerMin, limitsNow),
		perChange:  NewRateLimiter(o.LoginPerUserPerMin, limitsNow),
		known:      &knownClients{seen: map[string]time.Time{}, now: now},
		sessions:   sessions,
		now:        now,
		mfa:        o.MFA,
		perCode:    NewRateLimiterPer(o.LoginPerUserPerMin, time.Hour, limitsNow),
		totpNow:    totpNow,
	}
}

// endSessions ends user id's open sessions for reason why, once the change
// that ended the user's access has committed: a client that reconnects at
// once must find the change in place.
func (s *Service) endSessions(ctx context.Context, id int64, why error) {
	s.users.AfterCommit(ctx, func() { s.sessions.CloseUser(id, why) })
}

// NewUser is the input to create an account.
type NewUser struct {
	Username string
	Email    string
	Password string
	Role     Role
}

// validate checks every field at once; locations are the field names.
func (n *NewUser) validate() error {
	var f errs.Fields
	n.Username = strings.TrimSpace(n.Username)
	ValidateUsername(&f, []any{"username"}, n.Username)
	n.Email = NormalizeEmail(&f, []any{"email"}, n.Email)
	ValidatePassword(&f, []any{"password"}, n.Password, n.Username)
	return f.Err()
}

// RateLimitIP takes one credential attempt for a client IP.
func (s *Service) RateLimitIP(ip string) error {
	if ok, wait := s.perIP.Allow(ip); !ok {
		return tooMany(wait)
	}
	return nil
}

func tooMany(wait time.Duration) error {
	return &errs.Error{Kind: errs.TooManyRequests, Detail: "Too many attempts, try again later", RetryAfter: wait}
}

// Register creates a student account. Its caller has rate limited the client.
// With e-mail verification on, the account is created unverified and its
// verification mail queued in the same transaction.
func (s *Service) Register(ctx context.Context, n NewUser) (*User, error) {
	n.Role = RoleStudent
	if s.verify == nil {
		return s.create(ctx, n)
	}
	u, err := s.newUser(ctx, n)
	if err != nil {
		return nil, err
	}
	u.EmailVerifiedAt = nil
	if err := s.verify.register(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

// CreateUser creates an account with any role; for admins (the HTTP layer places the field locations).
func (s *Service) CreateUser(ctx context.Context, n NewUser) (*User, error) {
	if _, ok := ParseRole(string(n.Role)); !ok {
		return nil, errs.Field([]any{"role"}, "Role must be one of student, instructor, admin", "enum")
	}
	return s.create(ctx, n)
}

func (s *Service) create(ctx context.Context, n NewUser) (*User, error) {
	u, err := s.newUser(ctx, n)
	if err != nil {
		return nil, err
	}
	if err := s.users.CreateUser(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

// newUser validates n and returns the account to store, its address
// counted as verified.
func (s *Service) newUser(ctx context.Context, n NewUser) (*User, error) {
	if err := n.validate(); err != nil {
		return nil, err
	}
	hash, err := s.hasher.Hash(ctx, n.Password)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	return &User{
		Username: n.Username, Email: n.Email, PasswordHash: hash, Role: n.Role, IsActive: true,
		PasswordChangedAt: now, CreatedAt: now, UpdatedAt: now, EmailVerifiedAt: &now,
	}, nil
}

// Login checks credentials and returns an access token. Unknown users and wrong
// passwords get the same answer after the same bcrypt work; an inactive user
// learns it only with the right password.
//
// A user with two-factor sign-in on also needs otp, a current code of the
// authenticator app or an unused recovery code: without one the right
// password gets ErrMFARequired, with a wrong one ErrMFACodeWrong (both 401).
// A code passes once; code attempts are limited per account (allowCode).
//
// Wrong passwords are limited per account and client address, and, more
// slowly, per account: ten wrong logins from one address cannot lock the
// account's owner out elsewhere.
func (s *Service) Login(ctx context.Context, client, username, password, otp string) (string, error) {
	key := strings.ToLower(strings.TrimSpace(username))
	if ok, wait := s.perUser.Allow(key + "\x00" + client); !ok {
		return "", tooMany(wait)
	}
	if ok, wait := s.perAccount.Allow(key); !ok {
		return "", tooMany(wait)
	}
	u, err := s.users.FindUserByUsername(ctx, strings.TrimSpace(username))
	if err != nil && !errs.Is(err, errs.NotFound) {
		return "", err
	}
	hash := ""
	if u != nil {
		hash = u.PasswordHash
	}
	if len(password) > MaxPasswordLen {
		// bcrypt reads 72 bytes: a longer password would log in on its first 72
		// followed by anything. Registration refuses such a password, so login
		// does too, after a comparison that costs the same time.
		hash, password = "", password[:MaxPasswordLen]
	}
	if s.known.has(client) {
		ctx = WithPriority(ctx) // a flood from unknown addresses does not hold it up
	}
	ok, err := s.hasher.Verify(ctx, hash, password)
	if err != nil {
		return "", err
	}
	if !ok || u == nil {
		return "", ErrBadCredentials
	}
	if !u.IsActive {
		s.known.add(client)
		return "", ErrInactive
	}
	if s.verify != nil && u.EmailVerifiedAt == nil {
		// Like an inactive account, learnt only with the right password.
		return "", ErrEmailUnverified
	}
	if u.MFAEnabledAt != nil {
		// The password alone does not make the address known: the code does.
		if strings.TrimSpace(otp) == "" {
			return "", ErrMFARequired
		}
		if err := s.secondFactor(ctx, u.ID, otp); err != nil {
			return "", err
		}
	}
	s.known.add(client)
	return s.tokens.Issue(u)
}

// Authenticate runs the contract's per-request checks 1 to 4 on a bearer token
// and returns the current user (without its password hash), as the store has
// it now, so role and status changes apply at once (see
// UserStore.FindUserForRequest).
func (s *Service) Authenticate(ctx context.Context, token string) (*User, error) {
	if token == "" {
		return nil, ErrNotAuthenticated
	}
	c, err := s.tokens.Parse(token)
	if err != nil {
		return nil, ErrInvalidToken
	}
	return s.userOf(ctx, c)
}

// StillAllowed is Authenticate for a session opened with token while it was
// valid (a terminal), checked again while the session lasts: the token's
// expiry is not checked again, everything else is (the user exists and is
// active, no password change or logout since the token was issued).
func (s *Service) StillAllowed(ctx context.Context, token string) (*User, error) {
	c, err := s.tokens.parseExpired(token)
	if err != nil {
		return nil, ErrInvalidToken
	}
	return s.userOf(ctx, c)
}

// userOf returns the current user of verified claims c, if the token still
// stands: same username, issued after the last password change and logout,
// and the account active.
func (s *Service) userOf(ctx context.Context, c Claims) (*User, error) {
	id, _ := c.UserID()
	u, err := s.users.FindUserForRequest(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return nil, ErrTokenUserGone
	}
	if err != nil {
		return nil, err
	}
	// A name that no longer matches means the account was renamed or replaced.
	if u.Username != c.Username {
		return nil, ErrTokenUserGone
	}
	// Tokens issued before the last password change, or up to a logout, are dead.
	if c.Issued().Before(u.PasswordChangedAt.Truncate(time.Microsecond)) {
		return nil, ErrInvalidToken
	}
	if u.TokensRevokedAt != nil && !c.Issued().After(u.TokensRevokedAt.Truncate(time.Microsecond)) {
		return nil, ErrInvalidToken
	}
	if !u.IsActive {
		return nil, ErrInactive
	}
	return u, nil
}

// ChangePassword sets a new password; tokens issued before now stop working.
func (s *Service) ChangePassword(ctx context.Context, id int64, password string) error {
	u, err := s.users.FindUserByID(ctx, id)
	if err != nil {
		return err
	}
	var f errs.Fields
	ValidatePassword(&f, []any{"password"}, password, u.Username)
	if err := f.Err(); err != nil {
		return err
	}
	hash, err := s.hasher.Hash(ctx, password)
	if err != nil {
		return err
	}
	now := s.now().UTC()
	_, err = s.users.UpdateUser(ctx, id, func(u *User, _ int) error {
		u.PasswordHash, u.PasswordChangedAt, u.UpdatedAt = hash, now, now
		return nil
	})
	if err != nil {
		return err
	}
	s.endSessions(ctx, id, ErrPasswordChanged)
	return nil
}

// Page is a page of a list: 1-based page number and size.
type Page struct{ Number, Size int }

// Offset returns the number of items before the page.
func (p Page) Offset() int { return (p.Number - 1) * p.Size }

// ListUsers returns one page of users and the total count.
func (s *Service) ListUsers(ctx context.Context, role Role, p Page) ([]*User, int, error) {
	return s.users.FindUsers(ctx, UserFilter{Role: role, Offset: p.Offset(), Limit: p.Size})
}

// SetRole changes a user's role; the last active admin cannot be demoted.
func (s *Service) SetRole(ctx context.Context, id int64, role Role) (*User, error) {
	now := s.now().UTC()
	return s.users.UpdateUser(ctx, id, func(u *User, activeAdmins int) error {
		if u.IsActiveAdmin() && role != RoleAdmin && activeAdmins <= 1 {
			return ErrLastAdmin
		}
		u.Role, u.UpdatedAt = role, now
		return nil
	})
}

// SetActive activates or deactivates a user; the last active admin cannot be
// deactivated. A deactivated user's open sessions end.
func (s *Service) SetActive(ctx context.Context, id int64, active bool) (*User, error) {
	now := s.now().UTC()
	u, err := s.users.UpdateUser(ctx, id, func(u *User, activeAdmins int) error {
		if u.IsActiveAdmin() && !active && activeAdmins <= 1 {
			return ErrLastAdmin
		}
		u.IsActive, u.UpdatedAt = active, now
		return nil
	})
	if err == nil && !active {
		s.endSessions(ctx, id, ErrInactive)
	}
	return u, err
}

// DeleteUser removes a user; the last active admin cannot be deleted. The
// user's open sessions end.
func (s *Service) DeleteUser(ctx context.Context, id int64) error {
	err := s.users.DeleteUser(ctx, id, func(u *User, activeAdmins int) error {
		if u.IsActiveAdmin() && activeAdmins <= 1 {
			return ErrLastAdmin
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.endSessions(ctx, id, ErrTokenUserGone)
	return nil
}

// Stats counts users by role and status.
func (s *Service) Stats(ctx context.Context) (UserStats, error) { return s.users.CountUsers(ctx) }

// EnsureAdmin creates n as an admin when the store has no admin at all; it is how
// TUXLAB_BOOTSTRAP_ADMIN seeds a fresh database. It reports whether it created one.
func (s *Service) EnsureAdmin(ctx context.Context, n NewUser) (bool, error) {
	st, err := s.users.CountUsers(ctx)
	if err != nil {
		return false, err
	}
	if st.ByRole[RoleAdmin] > 0 {
		return false, nil
	}
	n.Role = RoleAdmin
	if _, err := s.CreateUser(ctx, n); err != nil {
		return false, err
	}
	return true, nil
}

// Logout revokes the user's tokens: the one presented and every other issued
// until now, so a stolen token can be cut off, and ends the user's open
// sessions. Logging in again issues a new one.
func (s *Service) Logout(ctx context.Context, id int64) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	_, err := s.users.UpdateUser(ctx, id, func(u *User, _ int) error {
		u.TokensRevokedAt, u.UpdatedAt = &now, now
		return nil
	})
	if err != nil {
		return err
	}
	s.endSessions(ctx, id, ErrLoggedOut)
	return nil
}

// knownClients remembers the addresses that logged in successfully lately:
// their bcrypt work waits in the first lane of the Hasher.
type knownClients struct {
	mu   sync.Mutex
	seen map[string]time.Time
	now  func() time.Time
}

// knownFor is how long a successful login makes an address known;
// maxKnown bounds the memory the map takes.
const (
	knownFor = 24 * time.Hour
	maxKnown = 100_000
)

func (k *knownClients) add(client string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if len(k.seen) >= maxKnown {
		for c, at := range k.seen {
			if now.Sub(at) > knownFor {
				delete(k.seen, c)
			}
		}
		if len(k.seen) >= maxKnown {
			clear(k.seen)
		}
	}
	k.seen[client] = now
}

func (k *knownClients) has(client string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	at, ok := k.seen[client]
	return ok && k.now().Sub(at) <= knownFor
}
