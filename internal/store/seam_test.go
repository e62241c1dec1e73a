package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/activity"
	"tuxlab/internal/attempt"
	"tuxlab/internal/auth"
	"tuxlab/internal/class"
	"tuxlab/internal/exam"
	"tuxlab/internal/lab"
	"tuxlab/internal/lesson"
	"tuxlab/internal/mail"
	"tuxlab/internal/profile"
	"tuxlab/internal/recording"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/share"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// seamFixture is what the writes of TestEveryWriteJoinsTheTransaction work on:
// one committed row of each kind.
type seamFixture struct {
	db        *store.DB
	user      *auth.User
	bare      *auth.User // owns nothing, for DeleteUser
	mfaUser   *auth.User // two-factor sign-in on, two recovery codes h1 and h2
	unused    *sandbox.Template
	spare     *sandbox.Container
	module    *lesson.Module
	theme     *lesson.Theme
	template  *sandbox.Template
	container *sandbox.Container
	lab       *lab.Lab
	labTry    *lab.Attempt
	exam      *exam.Exam
	examTry   *exam.Attempt
	class     *class.Class
	assigned  *class.Assignment
	shared    *share.Share
	rec       *recording.Recording
}

var seamNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func newSeamFixture(t *testing.T, db *store.DB) *seamFixture {
	t.Helper()
	ctx := context.Background()
	f := &seamFixture{db: db, user: newUser("learner", auth.RoleStudent)}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.Users().CreateUser(ctx, f.user))
	f.bare = newUser("bare", auth.RoleStudent)
	must(db.Users().CreateUser(ctx, f.bare))
	f.mfaUser = newUser("twofactor", auth.RoleStudent)
	must(db.Users().CreateUser(ctx, f.mfaUser))
	must(db.MFA().SetPendingMFA(ctx, f.mfaUser.ID, []byte("sealed"), seamNow))
	must(db.MFA().EnableMFA(ctx, f.mfaUser.ID, []byte("sealed"), 1, seamNow, []string{"h1", "h2"}))
	must(db.Sandboxes().SetSetting(ctx, "kept", "1"))
	f.module = &lesson.Module{Slug: "basics", Title: "Basics", OrderIndex: 1, CreatedAt: seamNow, UpdatedAt: seamNow}
	must(db.Lessons().CreateModule(ctx, f.module))
	f.theme = &lesson.Theme{ModuleID: f.module.ID, Slug: "shell", Title: "Shell", OrderIndex: 1, EstimatedMinutes: 5,
		CreatedAt: seamNow, UpdatedAt: seamNow}
	must(db.Lessons().CreateTheme(ctx, f.theme, &lesson.Content{Markdown: "# Shell", HTML: "<h1>Shell</h1>", UpdatedAt: seamNow}))
	f.template = seamTemplate("debian")
	must(db.Sandboxes().CreateTemplate(ctx, f.template))
	f.container = seamContainer(f.user.ID, f.template.ID, "c1")
	must(db.Sandboxes().CreateContainer(ctx, f.container, func([]*sandbox.Container, int) error { return nil }))
	f.spare = seamContainer(f.user.ID, f.template.ID, "spare")
	must(db.Sandboxes().CreateContainer(ctx, f.spare, func([]*sandbox.Container, int) error { return nil }))
	f.unused = seamTemplate("unused")
	must(db.Sandboxes().CreateTemplate(ctx, f.unused))
	f.lab = &lab.Lab{Slug: "lab1", TemplateID: f.template.ID, Title: "Lab", TimeLimitMinutes: 30, PassingScore: 50,
		Tasks: []*lab.Task{{Title: "t", Points: 1, Check: "true"}}, CreatedAt: seamNow, UpdatedAt: seamNow}
	must(db.Labs().CreateLab(ctx, f.lab))
	f.labTry = &lab.Attempt{Attempt: attempt.Attempt{UserID: f.user.ID, Status: attempt.InProgress, StartedAt: seamNow,
		ExpiresAt: seamNow.Add(time.Hour), MaxPoints: 1}, LabID: f.lab.ID}
	must(db.Labs().CreateAttempt(ctx, f.labTry, seamNow.Add(-time.Hour), func([]time.Time) error { return nil }))
	f.exam = &exam.Exam{Slug: "exam1", Title: "Exam", TimeLimitMinutes: 30, PassingScore: 50, CreatedAt: seamNow, UpdatedAt: seamNow,
		Questions: []*exam.Question{{Kind: exam.ShortText, Prompt: "?", Points: 1}}}
	must(db.Exams().CreateExam(ctx, f.exam))
	f.examTry = &exam.Attempt{Attempt: attempt.Attempt{UserID: f.user.ID, Status: attempt.InProgress, StartedAt: seamNow,
		ExpiresAt: seamNow.Add(time.Hour), MaxPoints: 1}, ExamID: f.exam.ID}
	must(db.Exams().CreateAttempt(ctx, f.examTry, 0))
	must(db.Mail().EnqueueMail(ctx, mail.Message{To: "learner@tuxlab.org", Subject: "s", Body: "b"}, seamNow))
	must(func() error {
		_, err := db.Leases().AcquireLease(ctx, "seam-held", "seam-holder", seamNow, time.Hour)
		return err
	}())
	must(db.Resets().CreatePasswordReset(ctx, &auth.PasswordReset{UserID: f.user.ID, TokenHash: "00ff",
		ExpiresAt: seamNow.Add(time.Hour), CreatedAt: seamNow}))
	must(db.Verifications().CreateEmailVerification(ctx, &auth.EmailVerification{UserID: f.user.ID, TokenHash: "00ff",
		ExpiresAt: seamNow.Add(time.Hour), CreatedAt: seamNow}))
	teacher := newUser("teacher", auth.RoleInstructor)
	must(db.Users().CreateUser(ctx, teacher))
	f.class = &class.Class{OwnerID: teacher.ID, Name: "Class", JoinCode: "ABCDEFGH", CreatedAt: seamNow}
	must(db.Classes().CreateClass(ctx, f.class, 10))
	_, err := db.Classes().AddMember(ctx, f.class.ID, f.user.ID, seamNow, 10)
	must(err)
	f.assigned = &class.Assignment{ClassID: f.class.ID, Kind: class.KindLab, ItemID: f.lab.ID, DueAt: seamNow.Add(time.Hour), CreatedAt: seamNow}
	must(db.Classes().CreateAssignment(ctx, f.assigned, 10))
	f.shared = &share.Share{ContainerID: f.container.ID, UserID: f.user.ID, TokenHash: "aa11", Mode: share.Write,
		ExpiresAt: seamNow.Add(time.Hour), CreatedAt: seamNow}
	must(db.Shares().CreateShare(ctx, f.shared, 10))
	f.rec = &recording.Recording{UserID: f.user.ID, ContainerID: f.container.ID, ContainerName: "c1", Width: 80, Height: 24, StartedAt: seamNow}
	must(db.Recordings().CreateRecording(ctx, f.rec))
	return f
}

func seamTemplate(name string) *sandbox.Template {
	return &sandbox.Template{Name: name, Image: "tuxlab/sandbox-debian:latest", MemoryMB: 256, CPUMillis: 500, PidsLimit: 64,
		DiskMB: 512, Shell: []string{"/bin/bash"}, CapAdd: []string{}, CreatedAt: seamNow, UpdatedAt: seamNow}
}

func seamContainer(userID, templateID int64, name string) *sandbox.Container {
	return &sandbox.Container{UserID: userID, TemplateID: templateID, Name: name, Status: sandbox.StatusStopped,
		CreatedAt: seamNow, ExpiresAt: seamNow.Add(time.Hour), LastActivityAt: seamNow}
}

// seamWrite is one exported store method that writes, called as a test would.
type seamWrite struct {
	store, method string
	write         func(ctx context.Context, f *seamFixture) error
}

// seamWrites lists every exported store method that writes. The guard in
// TestEveryWriteJoinsTheTransaction fails when a store gains a method that
// is in neither this table nor seamReads.
var seamWrites = []seamWrite{
	{"Shares", "CreateShare", func(ctx context.Context, f *seamFixture) error {
		return f.db.Shares().CreateShare(ctx, &share.Share{ContainerID: f.container.ID, UserID: f.user.ID, TokenHash: "bb22", Mode: share.Read,
			ExpiresAt: seamNow.Add(time.Hour), CreatedAt: seamNow}, 10)
	}},
	{"Shares", "SetShareTyping", func(ctx context.Context, f *seamFixture) error {
		return f.db.Shares().SetShareTyping(ctx, f.container.ID, f.shared.ID, true)
	}},
	{"Shares", "DeleteShare", func(ctx context.Context, f *seamFixture) error {
		return f.db.Shares().DeleteShare(ctx, f.container.ID, f.shared.ID)
	}},
	{"Recordings", "CreateRecording", func(ctx context.Context, f *seamFixture) error {
		return f.db.Recordings().CreateRecording(ctx, &recording.Recording{UserID: f.user.ID, ContainerID: 9, ContainerName: "x", Width: 1, Height: 1, StartedAt: seamNow})
	}},
	{"Recordings", "AppendRecording", func(ctx context.Context, f *seamFixture) error {
		return f.db.Recordings().AppendRecording(ctx, f.rec.ID, []byte("[0.1, \"o\", \"x\"]\n"), 16, false, &seamNow)
	}},
	{"Recordings", "DeleteRecording", func(ctx context.Context, f *seamFixture) error {
		return f.db.Recordings().DeleteRecording(ctx, f.rec.ID)
	}},
	{"Recordings", "DeleteRecordingsBefore", func(ctx context.Context, f *seamFixture) error {
		_, err := f.db.Recordings().DeleteRecordingsBefore(ctx, seamNow.Add(time.Hour))
		return err
	}},
	{"Classes", "CreateClass", func(ctx context.Context, f *seamFixture) error {
		return f.db.Classes().CreateClass(ctx, &class.Class{OwnerID: f.user.ID, Name: "New", JoinCode: "HGFEDCBA", CreatedAt: seamNow}, 10)
	}},
	{"Classes", "SetJoinCode", func(ctx context.Context, f *seamFixture) error {
		return f.db.Classes().SetJoinCode(ctx, f.class.ID, "ZZZZZZZZ", seamNow)
	}},
	{"Classes", "DeleteClass", func(ctx context.Context, f *seamFixture) error { return f.db.Classes().DeleteClass(ctx, f.class.ID) }},
	{"Classes", "AddMember", func(ctx context.Context, f *seamFixture) error {
		_, err := f.db.Classes().AddMember(ctx, f.class.ID, f.bare.ID, seamNow, 10)
		return err
	}},
	{"Classes", "RemoveMember", func(ctx context.Context, f *seamFixture) error {
		return f.db.Classes().RemoveMember(ctx, f.class.ID, f.user.ID)
	}},
	{"Classes", "CreateAssignment", func(ctx context.Context, f *seamFixture) error {
		return f.db.Classes().CreateAssignment(ctx, &class.Assignment{ClassID: f.class.ID, Kind: class.KindExam, ItemID: f.exam.ID,
			DueAt: seamNow.Add(time.Hour), CreatedAt: seamNow}, 10)
	}},
	{"Classes", "DeleteAssignment", func(ctx context.Context, f *seamFixture) error {
		return f.db.Classes().DeleteAssignment(ctx, f.class.ID, f.assigned.ID)
	}},
	{"Users", "CreateUser", func(ctx context.Context, f *seamFixture) error {
		return f.db.Users().CreateUser(ctx, newUser("newcomer", auth.RoleStudent))
	}},
	{"Users", "UpdateUser", func(ctx context.Context, f *seamFixture) error {
		_, err := f.db.Users().UpdateUser(ctx, f.user.ID, func(u *auth.User, _ int) error { u.Email = "changed@tuxlab.org"; return nil })
		return err
	}},
	{"Users", "DeleteUser", func(ctx context.Context, f *seamFixture) error {
		return f.db.Users().DeleteUser(ctx, f.bare.ID, func(*auth.User, int) error { return nil })
	}},
	{"Lessons", "CompleteTheme", func(ctx context.Context, f *seamFixture) error {
		_, _, err := f.db.Lessons().CompleteTheme(ctx, f.user.ID, f.theme.ID, seamNow)
		return err
	}},
	{"Lessons", "CreateModule", func(ctx context.Context, f *seamFixture) error {
		return f.db.Lessons().CreateModule(ctx, &lesson.Module{Slug: "more", Title: "More", CreatedAt: seamNow, UpdatedAt: seamNow})
	}},
	{"Lessons", "UpdateModule", func(ctx context.Context, f *seamFixture) error {
		title := "Renamed"
		_, err := f.db.Lessons().UpdateModule(ctx, f.module.ID, lesson.ModuleUpdate{Title: &title}, seamNow.Add(time.Hour))
		return err
	}},
	{"Lessons", "DeleteModule", func(ctx context.Context, f *seamFixture) error {
		return f.db.Lessons().DeleteModule(ctx, f.module.ID, true)
	}},
	{"Lessons", "ReorderModules", func(ctx context.Context, f *seamFixture) error {
		return f.db.Lessons().ReorderModules(ctx, []int64{f.module.ID}, seamNow.Add(time.Hour))
	}},
	{"Lessons", "ReorderThemes", func(ctx context.Context, f *seamFixture) error {
		return f.db.Lessons().ReorderThemes(ctx, f.module.ID, []int64{f.theme.ID}, seamNow.Add(time.Hour))
	}},
	{"Lessons", "CreateTheme", func(ctx context.Context, f *seamFixture) error {
		return f.db.Lessons().CreateTheme(ctx, &lesson.Theme{ModuleID: f.module.ID, Slug: "files", Title: "Files", CreatedAt: seamNow,
			UpdatedAt: seamNow}, &lesson.Content{Markdown: "x", HTML: "x", UpdatedAt: seamNow})
	}},
	{"Lessons", "UpdateTheme", func(ctx context.Context, f *seamFixture) error {
		title := "Renamed"
		_, err := f.db.Lessons().UpdateTheme(ctx, f.theme.ID, lesson.ThemeUpdate{Title: &title}, seamNow.Add(time.Hour))
		return err
	}},
	{"Lessons", "SetThemeContent", func(ctx context.Context, f *seamFixture) error {
		return f.db.Lessons().SetThemeContent(ctx, &lesson.Content{ThemeID: f.theme.ID, Markdown: "new", HTML: "new", UpdatedAt: seamNow.Add(time.Hour)})
	}},
	{"Lessons", "DeleteTheme", func(ctx context.Context, f *seamFixture) error {
		return f.db.Lessons().DeleteTheme(ctx, f.theme.ID)
	}},
	{"Lessons", "ImportCurriculum", func(ctx context.Context, f *seamFixture) error {
		_, err := f.db.Lessons().ImportCurriculum(ctx, &lesson.Curriculum{Modules: []*lesson.ModuleFile{{Slug: "imported", Title: "Imported",
			Themes: []*lesson.ThemeFile{{Slug: "imported-theme", Title: "T", Markdown: "m", HTML: "h"}}}}}, seamNow)
		return err
	}},
	{"Sandboxes", "CreateTemplate", func(ctx context.Context, f *seamFixture) error {
		return f.db.Sandboxes().CreateTemplate(ctx, seamTemplate("other"))
	}},
	{"Sandboxes", "UpdateTemplate", func(ctx context.Context, f *seamFixture) error {
		t := *f.template
		t.Description = "changed"
		return f.db.Sandboxes().UpdateTemplate(ctx, &t)
	}},
	{"Sandboxes", "DeleteTemplate", func(ctx context.Context, f *seamFixture) error {
		return f.db.Sandboxes().DeleteTemplate(ctx, f.unused.ID)
	}},
	{"Sandboxes", "CreateContainer", func(ctx context.Context, f *seamFixture) error {
		return f.db.Sandboxes().CreateContainer(ctx, seamContainer(f.user.ID, f.template.ID, "c2"), func([]*sandbox.Container, int) error { return nil })
	}},
	{"Sandboxes", "UpdateContainer", func(ctx context.Context, f *seamFixture) error {
		_, err := f.db.Sandboxes().UpdateContainer(ctx, f.container.ID, func(c *sandbox.Container) error { c.Status = sandbox.StatusRunning; return nil })
		return err
	}},
	{"Sandboxes", "UpdateContainerOfUser", func(ctx context.Context, f *seamFixture) error {
		_, err := f.db.Sandboxes().UpdateContainerOfUser(ctx, f.container.ID, func(c *sandbox.Container, _ []*sandbox.Container, _ int) error {
			c.Status = sandbox.StatusRunning
			return nil
		})
		return err
	}},
	{"Sandboxes", "DeleteContainer", func(ctx context.Context, f *seamFixture) error {
		return f.db.Sandboxes().DeleteContainer(ctx, f.spare.ID)
	}},
	{"Sandboxes", "SetSettingIfAbsent", func(ctx context.Context, f *seamFixture) error {
		_, err := f.db.Sandboxes().SetSettingIfAbsent(ctx, "seam", "1")
		return err
	}},
	{"Sandboxes", "SetSetting", func(ctx context.Context, f *seamFixture) error {
		return f.db.Sandboxes().SetSetting(ctx, "seam", "2")
	}},
	{"Sandboxes", "DeleteSetting", func(ctx context.Context, f *seamFixture) error {
		return f.db.Sandboxes().DeleteSetting(ctx, "kept")
	}},
	{"Labs", "CreateLab", func(ctx context.Context, f *seamFixture) error {
		return f.db.Labs().CreateLab(ctx, &lab.Lab{Slug: "lab2", TemplateID: f.template.ID, Title: "Lab 2", TimeLimitMinutes: 30,
			Tasks: []*lab.Task{{Title: "t", Points: 1, Check: "true"}}, CreatedAt: seamNow, UpdatedAt: seamNow})
	}},
	{"Labs", "UpdateLab", func(ctx context.Context, f *seamFixture) error {
		l := *f.lab
		l.Title = "Renamed"
		return f.db.Labs().UpdateLab(ctx, &l)
	}},
	{"Labs", "DeleteLab", func(ctx context.Context, f *seamFixture) error {
		return f.db.Labs().DeleteLab(ctx, f.lab.ID, true)
	}},
	{"Labs", "CreateAttempt", func(ctx context.Context, f *seamFixture) error {
		u := newUser("labber", auth.RoleStudent)
		if err := f.db.Users().CreateUser(ctx, u); err != nil {
			return err
		}
		a := *f.labTry
		a.UserID = u.ID
		return f.db.Labs().CreateAttempt(ctx, &a, seamNow.Add(-time.Hour), func([]time.Time) error { return nil })
	}},
	{"Labs", "UpdateAttempt", func(ctx context.Context, f *seamFixture) error {
		_, err := f.db.Labs().UpdateAttempt(ctx, f.labTry.ID, func(a *lab.Attempt) error { a.Checks++; return nil })
		return err
	}},
	{"Labs", "DeleteAttempt", func(ctx context.Context, f *seamFixture) error {
		return f.db.Labs().DeleteAttempt(ctx, f.labTry.ID)
	}},
	{"Exams", "CreateExam", func(ctx context.Context, f *seamFixture) error {
		return f.db.Exams().CreateExam(ctx, &exam.Exam{Slug: "exam2", Title: "Exam 2", TimeLimitMinutes: 30, CreatedAt: seamNow,
			UpdatedAt: seamNow, Questions: []*exam.Question{{Kind: exam.ShortText, Prompt: "?", Points: 1}}})
	}},
	{"Exams", "UpdateExam", func(ctx context.Context, f *seamFixture) error {
		e := *f.exam
		e.Title = "Renamed"
		return f.db.Exams().UpdateExam(ctx, &e)
	}},
	{"Exams", "DeleteExam", func(ctx context.Context, f *seamFixture) error {
		return f.db.Exams().DeleteExam(ctx, f.exam.ID, true)
	}},
	{"Exams", "CreateAttempt", func(ctx context.Context, f *seamFixture) error {
		u := newUser("examinee", auth.RoleStudent)
		if err := f.db.Users().CreateUser(ctx, u); err != nil {
			return err
		}
		a := *f.examTry
		a.UserID = u.ID
		return f.db.Exams().CreateAttempt(ctx, &a, 0)
	}},
	{"Exams", "SaveDraft", func(ctx context.Context, f *seamFixture) error {
		_, err := f.db.Exams().SaveDraft(ctx, f.examTry.ID, []exam.Answer{}, seamNow, func(*exam.Attempt) error { return nil })
		return err
	}},
	{"Exams", "UpdateAttempt", func(ctx context.Context, f *seamFixture) error {
		_, err := f.db.Exams().UpdateAttempt(ctx, f.examTry.ID, func(a *exam.Attempt) error { a.Points = 1; return nil })
		return err
	}},
	{"Profiles", "UpdateProfile", func(ctx context.Context, f *seamFixture) error {
		_, err := f.db.Profiles().UpdateProfile(ctx, f.user.ID, func(p *profile.Profile) error { p.Bio = "changed"; return nil })
		return err
	}},
	{"Mail", "EnqueueMail", func(ctx context.Context, f *seamFixture) error {
		return f.db.Mail().EnqueueMail(ctx, mail.Message{To: "x@tuxlab.org", Subject: "s", Body: "b"}, seamNow)
	}},
	{"Mail", "ClaimMail", func(ctx context.Context, f *seamFixture) error {
		rows, err := f.db.Mail().ClaimMail(ctx, seamNow, seamNow.Add(time.Minute), 8, 10)
		if err == nil && len(rows) == 0 {
			err = errors.New("claimed nothing")
		}
		return err
	}},
	{"Mail", "MailSent", func(ctx context.Context, f *seamFixture) error {
		return f.db.Mail().MailSent(ctx, 1, seamNow)
	}},
	{"Leases", "AcquireLease", func(ctx context.Context, f *seamFixture) error {
		ok, err := f.db.Leases().AcquireLease(ctx, "seam", "one", seamNow, time.Minute)
		if err == nil && !ok {
			err = errors.New("not acquired")
		}
		return err
	}},
	{"Leases", "ReleaseLease", func(ctx context.Context, f *seamFixture) error {
		return f.db.Leases().ReleaseLease(ctx, "seam-held", "seam-holder")
	}},
	{"Mail", "MailFailed", func(ctx context.Context, f *seamFixture) error {
		return f.db.Mail().MailFailed(ctx, 1, "down", seamNow.Add(time.Minute), true)
	}},
	{"Resets", "CreatePasswordReset", func(ctx context.Context, f *seamFixture) error {
		return f.db.Resets().CreatePasswordReset(ctx, &auth.PasswordReset{UserID: f.user.ID, TokenHash: "11ee",
			ExpiresAt: seamNow.Add(time.Hour), CreatedAt: seamNow})
	}},
	{"Resets", "UsePasswordResets", func(ctx context.Context, f *seamFixture) error {
		return f.db.Resets().UsePasswordResets(ctx, f.user.ID, seamNow)
	}},
	{"Verifications", "CreateEmailVerification", func(ctx context.Context, f *seamFixture) error {
		return f.db.Verifications().CreateEmailVerification(ctx, &auth.EmailVerification{UserID: f.user.ID, TokenHash: "11ee",
			ExpiresAt: seamNow.Add(time.Hour), CreatedAt: seamNow})
	}},
	{"Verifications", "UseEmailVerifications", func(ctx context.Context, f *seamFixture) error {
		return f.db.Verifications().UseEmailVerifications(ctx, f.user.ID, seamNow)
	}},
	{"MFA", "SetPendingMFA", func(ctx context.Context, f *seamFixture) error {
		return f.db.MFA().SetPendingMFA(ctx, f.user.ID, []byte("sealed"), seamNow)
	}},
	{"MFA", "EnableMFA", func(ctx context.Context, f *seamFixture) error {
		if err := f.db.MFA().SetPendingMFA(ctx, f.user.ID, []byte("sealed"), seamNow); err != nil {
			return err
		}
		return f.db.MFA().EnableMFA(ctx, f.user.ID, []byte("sealed"), 1, seamNow, []string{"h1", "h2"})
	}},
	{"MFA", "DisableMFA", func(ctx context.Context, f *seamFixture) error {
		return f.db.MFA().DisableMFA(ctx, f.mfaUser.ID)
	}},
	{"MFA", "UseTOTPStep", func(ctx context.Context, f *seamFixture) error {
		if ok, err := f.db.MFA().UseTOTPStep(ctx, f.mfaUser.ID, 2); !ok || err != nil {
			return fmt.Errorf("UseTOTPStep = %v, %w", ok, err)
		}
		return nil
	}},
	{"MFA", "UseRecoveryCode", func(ctx context.Context, f *seamFixture) error {
		if ok, err := f.db.MFA().UseRecoveryCode(ctx, f.mfaUser.ID, "h1", seamNow); !ok || err != nil {
			return fmt.Errorf("UseRecoveryCode = %v, %w", ok, err)
		}
		return nil
	}},
	{"MFA", "SetMFARequired", func(ctx context.Context, f *seamFixture) error {
		return f.db.MFA().SetMFARequired(ctx, true)
	}},
	{"Activity", "Record", func(ctx context.Context, f *seamFixture) error {
		return f.db.Activity().Record(ctx, &activity.Event{UserID: f.user.ID, Kind: activity.ThemeCompleted, At: seamNow, Title: "x"})
	}},
}

// seamReads lists the exported methods of each store that only read.
var seamReads = map[string][]string{
	"Users":   {"FindUserByID", "FindUserForRequest", "FindUserByUsername", "FindUsers", "CountUsers"},
	"Lessons": {"FindModules", "FindModuleByID", "FindThemeByID", "FindThemeContent", "FindCompletions", "CountLessons"},
	"Sandboxes": {"FindTemplates", "FindTemplateByID", "FindTemplateByName", "FindContainerByID", "FindContainers", "CountRunning",
		"Setting"},
	"Labs": {"FindLabs", "FindLabByID", "FindLabBySlug", "CountAttempts", "FindAttemptByID", "FindOpenAttempt", "FindAttempts"},
	"Exams": {"FindExams", "FindExamByID", "FindExamBySlug", "FindEndedAttemptSandboxes", "CountAttempts", "FindAttemptByID", "FindOpenAttempt",
		"FindUserAttempts"},
	"Profiles":      {"FindProfile"},
	"Mail":          {"CountMail"},
	"Leases":        {"LeaseHolder"},
	"Resets":        {"FindUserByEmail", "FindPasswordReset", "CountPasswordResets"},
	"Verifications": {"FindUserByEmail", "FindEmailVerification"},
	"Classes": {"FindClassByID", "FindClassByCode", "FindClasses", "IsMember", "FindMembers", "FindRecords", "FindAssignments",
		"FindLearnerAssignments"},
	"MFA":        {"FindMFA", "UnusedRecoveryCodes", "MFARequired"},
	"Shares":     {"FindShares", "FindShareByID", "FindShareByToken", "InExam"},
	"Recordings": {"FindRecording", "RecordingEvents", "FindRecordings", "Teaches", "OpenAttempt", "AttemptRecording", "SandboxOwner"},
	"Activity":   {"FindEvents", "EventBuckets", "LastActive", "FinishedAttempts", "CountRunningSandboxes", "SystemRows"},
}

// seamDB lists the exported methods of *DB itself: none of them writes a
// domain's rows (they run transactions, open stores, migrate, or read). A
// method that writes belongs to a per-domain store, whose writes the test
// calls.
var seamDB = []string{"InTx", "AfterCommit", "Migrate", "ListenUsers", "Close", "Engine", "Ping", "SQL",
	"Users", "Lessons", "Sandboxes", "Labs", "Exams", "Profiles", "Activity", "Mail", "Resets", "Verifications", "Classes", "MFA", "Leases", "Shares",
	"Recordings", "ModuleIDBySlug", "ModuleSlugByID", "ModuleOwnerByID", "TemplateIDByName", "TemplateNameByID", "UserIDByName", "UserNameByID",
	"Querier"} // Querier exists in tests only (export_test.go)

// seamStores are the per-domain stores, by the name of the *DB method that
// returns each.
var seamStores = []string{"Users", "Lessons", "Sandboxes", "Labs", "Exams", "Profiles", "Activity", "Mail", "Resets", "Verifications", "Classes", "MFA", "Leases", "Shares",
	"Recordings"}

// ownMethods returns the exported methods of store (a *DB method's result)
// that *DB itself does not have: the store's domain methods.
func ownMethods(db *store.DB, name string) []string {
	shared := map[string]bool{}
	dbType := reflect.TypeOf(db)
	for i := range dbType.NumMethod() {
		shared[dbType.Method(i).Name] = true
	}
	st := reflect.ValueOf(db).MethodByName(name).Call(nil)[0].Type()
	var out []string
	for i := range st.NumMethod() {
		if m := st.Method(i).Name; !shared[m] {
			out = append(out, m)
		}
	}
	return out
}

// errRollback ends the transactions of TestEveryWriteJoinsTheTransaction.
var errRollback = errors.New("roll back")

// TestEveryWriteJoinsTheTransaction calls every store write inside an InTx
// that then fails: nothing the write did may remain. A write that bypasses
// the transaction commits on its own (PostgreSQL) or waits for the
// transaction's write lock until the deadline (SQLite).
func TestEveryWriteJoinsTheTransaction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		t.Run("every writing method has a row", func(t *testing.T) {
			known := map[string]bool{}
			for _, w := range seamWrites {
				known[w.store+"."+w.method] = true
			}
			for s, names := range seamReads {
				for _, n := range names {
					known[s+"."+n] = true
				}
			}
			for _, m := range seamDB {
				known["DB."+m] = true
			}
			dbType := reflect.TypeOf(db)
			for i := range dbType.NumMethod() {
				if m := dbType.Method(i).Name; !known["DB."+m] {
					t.Errorf("DB.%s is not in seamDB: a method that writes belongs to a per-domain store and seamWrites", m)
				}
			}
			for _, s := range seamStores {
				for _, m := range ownMethods(db, s) {
					if !known[s+"."+m] {
						t.Errorf("%s.%s is neither in seamWrites nor in seamReads: add a row", s, m)
					}
				}
			}
		})
		f := newSeamFixture(t, db)
		for _, w := range seamWrites {
			t.Run(w.store+"."+w.method, func(t *testing.T) {
				before := snapshot(context.Background(), t, db)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				err := db.InTx(ctx, func(ctx context.Context) error {
					if err := w.write(ctx, f); err != nil {
						return fmt.Errorf("write: %w", err)
					}
					// The write changed what the transaction sees: the
					// row checks a write, not a no-op.
					if inside := snapshot(ctx, t, db); inside == before {
						t.Errorf("%s.%s changed nothing the transaction sees", w.store, w.method)
					}
					return errRollback
				})
				if !errors.Is(err, errRollback) {
					t.Fatalf("InTx = %v, want the rollback the write was made in", err)
				}
				if after := snapshot(context.Background(), t, db); after != before {
					t.Errorf("a rolled back %s.%s left rows behind:\nbefore %s\nafter  %s", w.store, w.method, before, after)
				}
			})
		}
	})
}

// snapshot renders every row of every table the stores write, as the
// transaction ctx carries sees them, or as committed.
func snapshot(ctx context.Context, t *testing.T, db *store.DB) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{"users", "modules", "themes", "theme_completions", "sandbox_templates", "containers", "settings",
		"labs", "lab_tasks", "lab_attempts", "exams", "exam_questions", "exam_attempts", "activity", "activity_quarters",
		"mail_outbox", "password_resets", "email_verifications", "classes", "class_members", "class_assignments", "user_mfa", "mfa_recovery_codes", "leases", "terminal_shares",
		"terminal_recordings"} {
		rows, err := db.Querier(ctx).QueryContext(ctx, `SELECT * FROM `+table)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := rowLines(rows)
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(lines)
		fmt.Fprintf(&b, "%s%v ", table, lines)
	}
	return b.String()
}

func rowLines(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprint(vals...))
	}
	return out, rows.Err()
}
