package class

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"

	"tuxlab/internal/actor"
	"tuxlab/internal/auth"
	"tuxlab/internal/errs"
	"tuxlab/internal/lesson"
)

// Curriculum is what the learners view needs of the lessons.
type Curriculum interface {
	// Modules returns the curriculum in order (and a user's completions,
	// which the view does not use: it reads every learner's at once).
	Modules(ctx context.Context, userID int64) ([]*lesson.Module, map[int64]time.Time, error)
}

// Options tune a Service; zero values take the defaults.
type Options struct {
	// JoinsPerMinute bounds each user's join attempts (DefaultJoinsPerMinute).
	JoinsPerMinute int
	// Now is the clock; nil for the wall clock.
	Now func() time.Time
	// LimitsNow is the rate limiter's clock; nil for Now.
	LimitsNow func() time.Time
}

// Service is the class domain.
type Service struct {
	store   Store
	lessons Curriculum
	joins   *auth.RateLimiter
	now     func() time.Time
}

// NewService returns a Service over store and the lessons.
func NewService(store Store, lessons Curriculum, o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LimitsNow == nil {
		o.LimitsNow = o.Now
	}
	if o.JoinsPerMinute <= 0 {
		o.JoinsPerMinute = DefaultJoinsPerMinute
	}
	return &Service{store: store, lessons: lessons, joins: auth.NewRateLimiter(o.JoinsPerMinute, o.LimitsNow), now: o.Now}
}

func (s *Service) stamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// canTeach reports whether a's role may own classes: instructors and admins.
func canTeach(a actor.Actor) bool { return a.Role == actor.Instructor || a.Role == actor.Admin }

// NewCode draws a random join code of CodeLen characters of CodeAlphabet.
func NewCode() (string, error) {
	b := make([]byte, CodeLen)
	n := big.NewInt(int64(len(CodeAlphabet)))
	for i := range b {
		k, err := rand.Int(rand.Reader, n)
		if err != nil {
			return "", fmt.Errorf("draw a join code: %w", err)
		}
		b[i] = CodeAlphabet[k.Int64()]
	}
	return string(b), nil
}

// NormalizeCode is code as stored: capitals, without the spaces and dashes
// a person may type or a page may show to group the characters.
func NormalizeCode(code string) string {
	return strings.ToUpper(strings.NewReplacer(" ", "", "-", "", "\t", "").Replace(code))
}

// withNewCode runs set with fresh codes until one is not taken.
func withNewCode(set func(code string) error) error {
	for range 5 {
		code, err := NewCode()
		if err != nil {
			return err
		}
		if err := set(code); !errors.Is(err, ErrCodeClash) {
			return err
		}
	}
	return fmt.Errorf("five join codes in a row were taken: %w", ErrCodeClash)
}

// checkName returns name trimmed, or a validation error located at "name".
func checkName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", errs.Field([]any{"name"}, "Name must not be empty", "value_error")
	case utf8.RuneCountInString(name) > MaxNameLen:
		return "", errs.Field([]any{"name"}, fmt.Sprintf("Name must be at most %d characters", MaxNameLen), "value_error")
	}
	return name, nil
}

// Create makes a class owned by a, with a fresh join code. Only instructors
// and admins may (ErrInstructorRequired); ErrTooManyClasses past the limit.
func (s *Service) Create(ctx context.Context, a actor.Actor, name string) (*Class, error) {
	if !canTeach(a) {
		return nil, ErrInstructorRequired
	}
	name, err := checkName(name)
	if err != nil {
		return nil, err
	}
	now := s.stamp()
	c := &Class{OwnerID: a.UserID, Name: name, CreatedAt: now}
	err = withNewCode(func(code string) error {
		c.JoinCode = code
		return s.store.CreateClass(ctx, c, MaxClassesPerOwner)
	})
	if err != nil {
		return nil, err
	}
	return s.store.FindClassByID(ctx, c.ID)
}

// taught returns class id when a teaches it (its owner, or an admin), else
// ErrClassNotFound: a class is as invisible to other instructors as to
// anyone else. Students get ErrInstructorRequired.
func (s *Service) taught(ctx context.Context, a actor.Actor, id int64) (*Class, error) {
	if !canTeach(a) {
		return nil, ErrInstructorRequired
	}
	c, err := s.store.FindClassByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if !a.Owns(c.OwnerID) {
		return nil, ErrClassNotFound
	}
	return c, nil
}

// Class returns class id as a sees it: its teacher (owner or admin) or a
// learner of it; anyone else gets ErrClassNotFound.
func (s *Service) Class(ctx context.Context, a actor.Actor, id int64) (*Membership, error) {
	c, err := s.store.FindClassByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if canTeach(a) && a.Owns(c.OwnerID) {
		return &Membership{Class: c, Teaching: true}, nil
	}
	member, err := s.store.IsMember(ctx, id, a.UserID)
	if err != nil {
		return nil, err
	}
	if !member {
		return nil, ErrClassNotFound
	}
	return &Membership{Class: c}, nil
}

// Classes returns the classes a teaches (every class for an admin) and then
// those a is a learner of.
func (s *Service) Classes(ctx context.Context, a actor.Actor) ([]*Membership, error) {
	var out []*Membership
	if canTeach(a) {
		f := ClassFilter{OwnerID: a.UserID}
		if a.IsAdmin() {
			f = ClassFilter{}
		}
		taught, err := s.store.FindClasses(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, c := range taught {
			out = append(out, &Membership{Class: c, Teaching: true})
		}
	}
	joined, err := s.store.FindClasses(ctx, ClassFilter{MemberID: a.UserID})
	if err != nil {
		return nil, err
	}
	for _, c := range joined {
		if !(canTeach(a) && a.Owns(c.OwnerID)) { // an admin's joined classes are already listed
			out = append(out, &Membership{Class: c})
		}
	}
	return out, nil
}

// RotateCode gives class id a new join code; the old one stops working.
func (s *Service) RotateCode(ctx context.Context, a actor.Actor, id int64) (*Class, error) {
	if _, err := s.taught(ctx, a, id); err != nil {
		return nil, err
	}
	now := s.stamp()
	if err := withNewCode(func(code string) error { return s.store.SetJoinCode(ctx, id, code, now) }); err != nil {
		return nil, err
	}
	return s.store.FindClassByID(ctx, id)
}

// Delete removes class id, its memberships and its assignments.
func (s *Service) Delete(ctx context.Context, a actor.Actor, id int64) error {
	if _, err := s.taught(ctx, a, id); err != nil {
		return err
	}
	return s.store.DeleteClass(ctx, id)
}

// Join makes a a learner of the class whose join code is code; joined is
// false when a already was one. Each user's attempts are rate limited, so
// codes cannot be guessed; an unknown code is ErrCodeNotFound.
func (s *Service) Join(ctx context.Context, a actor.Actor, code string) (m *Membership, joined bool, err error) {
	if ok, wait := s.joins.Allow(fmt.Sprint(a.UserID)); !ok {
		return nil, false, &errs.Error{Kind: errs.TooManyRequests, Detail: "Too many join attempts, try again later", RetryAfter: wait}
	}
	code = NormalizeCode(code)
	if code == "" {
		return nil, false, errs.Field([]any{"code"}, "Code must not be empty", "value_error")
	}
	if len(code) > 4*CodeLen {
		return nil, false, ErrCodeNotFound
	}
	c, err := s.store.FindClassByCode(ctx, code)
	if errors.Is(err, ErrClassNotFound) {
		return nil, false, ErrCodeNotFound
	}
	if err != nil {
		return nil, false, err
	}
	if c.OwnerID == a.UserID {
		return nil, false, ErrOwnClass
	}
	added, err := s.store.AddMember(ctx, c.ID, a.UserID, s.stamp(), MaxLearnersPerClass)
	if err != nil {
		return nil, false, err
	}
	if c, err = s.store.FindClassByID(ctx, c.ID); err != nil {
		return nil, false, err
	}
	return &Membership{Class: c}, added, nil
}

// Leave ends a's membership of class id (ErrNotMember when a is not a learner of it).
func (s *Service) Leave(ctx context.Context, a actor.Actor, id int64) error {
	return s.store.RemoveMember(ctx, id, a.UserID)
}

// RemoveLearner takes userID out of class id, as its teacher. A user who is
// not a learner of the class is ErrNotMember, as for any id the teacher
// may not see.
func (s *Service) RemoveLearner(ctx context.Context, a actor.Actor, id, userID int64) error {
	if _, err := s.taught(ctx, a, id); err != nil {
		return err
	}
	return s.store.RemoveMember(ctx, id, userID)
}
