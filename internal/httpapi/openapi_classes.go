package httpapi

import (
	"fmt"
	"maps"

	"tuxlab/internal/class"
)

// The OpenAPI schemas and operations of classes (docs/classes.md).

func init() { maps.Copy(schemas, classSchemas) }

var (
	attemptState   = map[string]any{"type": "string", "enum": []string{"in_progress", "grading", "submitted", "expired"}}
	assignmentKind = map[string]any{"type": "string", "enum": []string{"lab", "exam"}}
)

var classSchemas = map[string]any{
	"Class": obj([]string{"id", "name", "role", "teacher", "join_code", "learner_count", "created_at"}, map[string]any{
		"id": intSchema, "name": strSchema,
		"role": map[string]any{"type": "string", "enum": []string{"teacher", "learner"},
			"description": "teacher: the caller owns the class or is an admin; learner: the caller joined it."},
		"teacher": map[string]any{"type": "string", "description": "The username of the instructor who owns the class."},
		"join_code": map[string]any{"type": []string{"string", "null"}, "pattern": fmt.Sprintf("^[%s]{%d}$", class.CodeAlphabet, class.CodeLen),
			"description": "The code learners join with; null for a learner."},
		"learner_count": map[string]any{"type": []string{"integer", "null"}, "description": "Null for a learner."},
		"created_at":    tsSchema,
	}),
	"ClassList": arrayOf(ref("Class")),
	"NewClass":  obj([]string{"name"}, map[string]any{"name": map[string]any{"type": "string", "minLength": 1, "maxLength": class.MaxNameLen}}),
	"JoinClass": obj([]string{"code"}, map[string]any{"code": map[string]any{"type": "string", "description": "Case, spaces and dashes do not matter."}}),
	"ClassTask": obj([]string{"task_id", "position", "title", "passed", "points"}, map[string]any{"task_id": intSchema, "position": intSchema, "title": strSchema, "passed": boolSchema, "points": intSchema}),
	"ClassLabAttempt": obj([]string{"attempt_id", "lab_id", "title", "status", "started_at", "finished_at", "score", "passed", "tasks"}, map[string]any{
		"attempt_id": intSchema, "lab_id": intSchema, "title": strSchema, "status": attemptState, "started_at": tsSchema, "finished_at": nullableTS,
		"score": intSchema, "passed": boolSchema, "tasks": arrayOf(ref("ClassTask"))}),
	"ClassExamAttempt": obj([]string{"attempt_id", "exam_id", "title", "status", "started_at", "finished_at", "score", "passed"}, map[string]any{
		"attempt_id": intSchema, "exam_id": intSchema, "title": strSchema, "status": attemptState, "started_at": tsSchema, "finished_at": nullableTS,
		"score": intSchema, "passed": boolSchema}),
	"ClassLearner": obj([]string{"user_id", "username", "joined_at", "progress", "modules", "labs", "exams", "activity"}, map[string]any{
		"user_id": intSchema, "username": strSchema, "joined_at": tsSchema,
		"progress": obj([]string{"completed", "total", "percent"}, map[string]any{"completed": intSchema, "total": intSchema,
			"percent": map[string]any{"type": "integer", "description": "Themes completed of the whole curriculum, rounded down."}}),
		"modules": arrayOf(obj([]string{"module_id", "title", "completed", "total", "percent"}, map[string]any{
			"module_id": intSchema, "title": strSchema, "completed": intSchema, "total": intSchema, "percent": intSchema})),
		"labs":  map[string]any{"type": "array", "items": ref("ClassLabAttempt"), "description": "Every attempt, oldest first, with per-task results (never the checks or their output)."},
		"exams": map[string]any{"type": "array", "items": ref("ClassExamAttempt"), "description": "Every attempt, oldest first."},
		"activity": obj([]string{"days", "events", "last_active_at"}, map[string]any{
			"days": intSchema, "events": map[string]any{"type": "integer", "description": "Things the learner did in the last `days` days."},
			"last_active_at": nullableTS}),
	}),
	"ClassLearnerList": arrayOf(ref("ClassLearner")),
	"NewAssignment": obj([]string{"kind", "item_id", "due_at"}, map[string]any{
		"kind": assignmentKind, "item_id": map[string]any{"type": "integer", "minimum": 1, "description": "The laboratory's or the exam's id."},
		"due_at": map[string]any{"type": "string", "format": "date-time", "description": "RFC 3339, in the future."}}),
	"Assignment": obj([]string{"id", "class_id", "kind", "item_id", "title", "due_at", "created_at"}, map[string]any{
		"id": intSchema, "class_id": intSchema, "kind": assignmentKind, "item_id": intSchema, "title": strSchema, "due_at": tsSchema, "created_at": tsSchema}),
	"AssignmentList": arrayOf(ref("Assignment")),
	"LearnerAssignment": obj([]string{"id", "class_id", "class_name", "kind", "item_id", "title", "due_at", "created_at", "done", "passed", "overdue"}, map[string]any{
		"id": intSchema, "class_id": intSchema, "class_name": strSchema, "kind": assignmentKind, "item_id": intSchema, "title": strSchema,
		"due_at": tsSchema, "created_at": tsSchema,
		"done":    map[string]any{"type": "boolean", "description": "You finished (submitted, or let expire) an attempt of the item."},
		"passed":  map[string]any{"type": "boolean", "description": "One of your attempts passed."},
		"overdue": map[string]any{"type": "boolean", "description": "Not done, and the due date has passed."}}),
	"LearnerAssignmentList": arrayOf(ref("LearnerAssignment")),
}

var learnersParams = []param{
	{name: "sort", schema: map[string]any{"type": "string", "enum": []string{"name", "progress", "last_active"}, "default": "name"},
		desc: "name: username; progress: themes completed; last_active: the last activity (never active first)."},
	{name: "order", schema: map[string]any{"type": "string", "enum": []string{"asc", "desc"}, "default": "asc"}},
	{name: "days", schema: map[string]any{"type": "integer", "minimum": 1, "maximum": class.MaxActivityDays, "default": class.DefaultActivityDays},
		desc: "The activity window: events of the last N days."},
}

var (
	docClasses = op{tag: "classes", summary: "Your classes: those you teach (every class for an admin), then those you joined", status: 200, result: "ClassList",
		desc: "A learner sees neither the join code nor the other learners."}
	docCreateClass = op{tag: "classes", summary: "Create a class with a fresh join code (instructors and admins)", status: 201, result: "Class", body: "NewClass", errors: []int{409},
		desc: fmt.Sprintf("409 past %d classes per instructor.", class.MaxClassesPerOwner)}
	docJoinClass = op{tag: "classes", summary: "Join a class with its code", status: 201, result: "Class", body: "JoinClass", also: 200, errors: []int{404, 409, 429},
		desc: fmt.Sprintf("201 when you joined, 200 when you already were a learner of it. 404 for an unknown code; attempts are limited to %d a minute per user (429). 409 for your own class or a class of %d learners.",
			class.DefaultJoinsPerMinute, class.MaxLearnersPerClass)}
	docClass           = op{tag: "classes", summary: "A class you teach or joined", status: 200, result: "Class", errors: []int{404}}
	docDeleteClass     = op{tag: "classes", summary: "Delete a class you teach, its memberships and assignments", status: 200, result: "Deleted", errors: []int{404}}
	docRotateClassCode = op{tag: "classes", summary: "Give a class you teach a new join code; the old one stops working", status: 200, result: "Class", errors: []int{404}}
	docLeaveClass      = op{tag: "classes", summary: "Leave a class you joined", status: 200, result: "Deleted", errors: []int{404}}
	docClassLearners   = op{tag: "classes", summary: "The learners of a class you teach: progress per module, lab attempts with per-task results, exam results, recent activity",
		status: 200, result: "ClassLearnerList", paged: true, params: append(append([]param{}, learnersParams...), pageParams...), errors: []int{404}}
	docClassLearnersCSV = op{tag: "classes", summary: "The learners view as CSV: a header row, one row per learner", status: 200, media: "text/csv",
		params: learnersParams, errors: []int{404},
		desc: "Every learner, in the order of sort and order. Cells that would start a spreadsheet formula (=, +, -, @) are prefixed with '."}
	docRemoveLearner    = op{tag: "classes", summary: "Remove a learner from a class you teach", status: 200, result: "Deleted", errors: []int{404}}
	docAssignments      = op{tag: "classes", summary: "A class's assignments by due date, for its teacher and its learners", status: 200, result: "AssignmentList", errors: []int{404}}
	docCreateAssignment = op{tag: "classes", summary: "Set a due date on a laboratory or an exam for a class you teach", status: 201, result: "Assignment", body: "NewAssignment", errors: []int{404, 409},
		desc: fmt.Sprintf("422 for a missing item or a date not in the future; 409 for an item already assigned or past %d assignments.", class.MaxAssignmentsPerClass)}
	docDeleteAssignment     = op{tag: "classes", summary: "Delete an assignment of a class you teach", status: 200, result: "Deleted", errors: []int{404}}
	docDashboardAssignments = op{tag: "dashboard", summary: "The assignments of the classes you joined, by due date, and whether you did them", status: 200, result: "LearnerAssignmentList"}
)
