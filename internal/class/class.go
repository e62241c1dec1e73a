// Package class lets an instructor gather learners into a class with a join
// code, follow their progress, labs, exams and activity, and set due dates
// on laboratories and exams (assignments). Who may see what is decided here
// (docs/classes.md): a class's instructor or an admin sees its learners; a
// learner sees the classes they joined and their assignments, never the
// join code or the other learners; anyone else gets ErrClassNotFound.
package class

import (
	"context"
	"errors"
	"time"

	"tuxlab/internal/errs"
)

// Limits of the class domain (docs/classes.md).
const (
	// MaxClassesPerOwner bounds the classes one instructor (or admin) owns.
	MaxClassesPerOwner = 50
	// MaxLearnersPerClass bounds a class's learners.
	MaxLearnersPerClass = 500
	// MaxAssignmentsPerClass bounds a class's assignments.
	MaxAssignmentsPerClass = 100
	// MaxNameLen bounds a class's name, in characters.
	MaxNameLen = 100
	// CodeLen is the length of a join code.
	CodeLen = 8
	// CodeAlphabet is what join codes are made of: capitals and digits
	// without the look-alikes 0, O, 1, I and L.
	CodeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
	// DefaultJoinsPerMinute is how many join attempts a user may make in a
	// burst, refilled over a minute: guessing a code takes billions.
	DefaultJoinsPerMinute = 10
	// DefaultActivityDays is the window of the learners view's activity count.
	DefaultActivityDays = 7
	// MaxActivityDays bounds that window.
	MaxActivityDays = 90
)

// Class is an instructor's group of learners.
type Class struct {
	ID        int64
	OwnerID   int64
	OwnerName string // the instructor's username
	Name      string
	JoinCode  string
	CreatedAt time.Time
	// Learners counts the class's members.
	Learners int
}

// Membership is a class as one caller sees it.
type Membership struct {
	*Class
	// Teaching is true for the class's instructor and for admins, who see
	// its join code and learners; false for a learner of the class.
	Teaching bool
}

// Member is a learner of a class.
type Member struct {
	UserID   int64
	Username string
	JoinedAt time.Time
}

// Kind is what an assignment asks for.
type Kind string

// The kinds of assignment.
const (
	KindLab  Kind = "lab"
	KindExam Kind = "exam"
)

// Assignment is a laboratory or an exam a class is to finish by a date.
type Assignment struct {
	ID        int64
	ClassID   int64
	Kind      Kind
	ItemID    int64
	Title     string // the laboratory's or exam's
	DueAt     time.Time
	CreatedAt time.Time
}

// LearnerAssignment is an assignment as one learner sees it on their dashboard.
type LearnerAssignment struct {
	Assignment
	ClassName string
	// Done: the learner has finished (submitted, or let expire) an attempt
	// of the item; Passed: one of them passed.
	Done, Passed bool
	// Overdue: not done and past the due date.
	Overdue bool
}

// TaskResult is one task of a lab attempt as an instructor sees it: whether
// it passed and its points, never the check's script or output.
type TaskResult struct {
	TaskID   int64  `json:"task_id"`
	Position int    `json:"position"`
	Title    string `json:"title"`
	Passed   bool   `json:"passed"`
	Points   int    `json:"points"`
}

// AttemptRecord is one lab or exam attempt of a learner.
type AttemptRecord struct {
	ID         int64
	UserID     int64
	ItemID     int64 // the laboratory or the exam
	Title      string
	Status     string // in_progress, grading, submitted or expired
	StartedAt  time.Time
	FinishedAt *time.Time
	Score      int
	Passed     bool
	Tasks      []TaskResult // labs only
}

// Completion is a theme a learner completed.
type Completion struct {
	UserID, ThemeID int64
}

// UserCount is a number per user.
type UserCount struct {
	UserID int64
	N      int
}

// UserTime is a time per user.
type UserTime struct {
	UserID int64
	At     time.Time
}

// Records are what the learners view reads of a class's members at once.
type Records struct {
	Completions []Completion
	Labs        []AttemptRecord // oldest first
	Exams       []AttemptRecord // oldest first
	Events      []UserCount     // events since the window's start
	LastActive  []UserTime
}

// ClassFilter selects classes; the zero filter selects every class.
type ClassFilter struct {
	OwnerID  int64 // classes this user owns, when not 0
	MemberID int64 // classes this user is a learner of, when not 0
}

// Errors of the class domain.
var (
	ErrClassNotFound      = errs.E(errs.NotFound, "Class not found")
	ErrCodeNotFound       = errs.E(errs.NotFound, "No class has this join code")
	ErrNotMember          = errs.E(errs.NotFound, "Not a learner of this class")
	ErrAssignmentNotFound = errs.E(errs.NotFound, "Assignment not found")
	ErrInstructorRequired = errs.E(errs.Forbidden, "Instructor access required")
	ErrTooManyClasses     = errs.Errorf(errs.Conflict, "You have %d classes, the most one instructor may have: delete one first", MaxClassesPerOwner)
	ErrClassFull          = errs.Errorf(errs.Conflict, "This class has %d learners, the most a class may have", MaxLearnersPerClass)
	ErrTooManyAssignments = errs.Errorf(errs.Conflict, "This class has %d assignments, the most a class may have: delete one first", MaxAssignmentsPerClass)
	ErrAssignmentExists   = errs.E(errs.Conflict, "This class already has an assignment of this item: delete it to set another due date")
	ErrOwnClass           = errs.E(errs.Conflict, "You teach this class: learners join it")
	// ErrCodeClash is the store's answer to a join code another class has;
	// the service draws another.
	ErrCodeClash = errors.New("join code taken")
	// ErrItemNotFound is the store's answer to an assignment of a missing
	// laboratory or exam.
	ErrItemNotFound = errors.New("item not found")
)

// Store keeps classes, members and assignments, and reads the members'
// records. Missing rows are ErrClassNotFound, ErrNotMember or
// ErrAssignmentNotFound. It applies no access rule: the Service does.
type Store interface {
	// CreateClass inserts c, setting its id, unless its owner already has
	// max classes (ErrTooManyClasses); a join code in use is ErrCodeClash.
	CreateClass(ctx context.Context, c *Class, max int) error
	FindClassByID(ctx context.Context, id int64) (*Class, error)
	// FindClassByCode finds the class with this join code, or ErrClassNotFound.
	FindClassByCode(ctx context.Context, code string) (*Class, error)
	// FindClasses returns the classes f selects, oldest first.
	FindClasses(ctx context.Context, f ClassFilter) ([]*Class, error)
	// SetJoinCode changes a class's code; a code in use is ErrCodeClash.
	SetJoinCode(ctx context.Context, id int64, code string, now time.Time) error
	DeleteClass(ctx context.Context, id int64) error

	// AddMember makes userID a learner of the class unless it has max
	// learners (ErrClassFull); added is false when they already were one.
	AddMember(ctx context.Context, classID, userID int64, at time.Time, max int) (added bool, err error)
	// RemoveMember ends a membership, or returns ErrNotMember.
	RemoveMember(ctx context.Context, classID, userID int64) error
	IsMember(ctx context.Context, classID, userID int64) (bool, error)
	// FindMembers returns the class's learners.
	FindMembers(ctx context.Context, classID int64) ([]Member, error)
	// FindRecords reads the class's learners' completions, attempts, events
	// since a time and last activity.
	FindRecords(ctx context.Context, classID int64, since time.Time) (*Records, error)

	// CreateAssignment inserts a, setting its id and title, unless the class
	// has max assignments (ErrTooManyAssignments) or one of the same item
	// (ErrAssignmentExists); a missing item is ErrItemNotFound.
	CreateAssignment(ctx context.Context, a *Assignment, max int) error
	// FindAssignments returns a class's assignments by due date.
	FindAssignments(ctx context.Context, classID int64) ([]*Assignment, error)
	DeleteAssignment(ctx context.Context, classID, id int64) error
	// FindLearnerAssignments returns the assignments of every class userID
	// is a learner of, by due date, with whether userID has done each.
	FindLearnerAssignments(ctx context.Context, userID int64) ([]*LearnerAssignment, error)
}
