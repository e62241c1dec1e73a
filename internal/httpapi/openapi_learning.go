package httpapi

import "maps"

// The OpenAPI schemas and operations of exams and laboratories.

func init() { maps.Copy(schemas, learningSchemas) }

// closed is obj with no other properties allowed: the public views of exams
// and labs must never grow a field that could carry an answer or a script.
func closed(required []string, props map[string]any) map[string]any {
	o := obj(required, props)
	o["additionalProperties"] = false
	return o
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

var (
	nullableInt   = map[string]any{"type": []string{"integer", "null"}}
	attemptStatus = map[string]any{"type": "string", "enum": []string{"in_progress", "grading", "submitted", "expired"},
		"description": "in_progress until submitted (graded) or expired (the time limit passed first); grading while one submit grades it."}
	questionKind = map[string]any{"type": "string", "enum": []string{"single_choice", "multiple_choice", "short_text", "practical"}}
	strList      = arrayOf(strSchema)
	feedback     = map[string]any{"type": "array", "items": strSchema, "description": "Why a check failed: the lines its script printed starting `FAIL: `, at most three."}

	taskProps = map[string]any{"id": intSchema, "position": intSchema, "title": strSchema,
		"description": map[string]any{"type": "string", "description": "Markdown."}, "description_html": renderedOf("description"),
		"hint": map[string]any{"type": "string", "description": "Markdown."}, "hint_html": renderedOf("hint"), "points": intSchema,
		"machine": map[string]any{"type": "string", "description": "Labs with machines: the machine the task is checked on; empty for a lab of one sandbox."}}
	labProps = map[string]any{
		"machines": map[string]any{"type": "array", "items": ref("LabMachine"),
			"description": "The lab's machines (2 to 4, on one private segment where their names resolve), each made from the template at a start; empty for a lab of one sandbox (docs/machines.md)."},
		"id": intSchema, "slug": strSchema, "module_id": nullableInt,
		"section_id":  map[string]any{"type": []string{"integer", "null"}, "description": "The same as module_id: a section is a lesson module."},
		"template_id": map[string]any{"type": "integer", "description": "The sandbox template a start provisions."},
		"title":       strSchema, "description": map[string]any{"type": "string", "description": "Markdown."},
		"description_html":   renderedOf("description"),
		"time_limit_minutes": intSchema, "passing_score": map[string]any{"type": "integer", "description": "Percent of max_points needed to pass."},
		"max_points": intSchema, "tasks": arrayOf(ref("Task")),
	}
	examSummaryProps = map[string]any{
		"id": intSchema, "slug": strSchema, "module_id": nullableInt,
		"template_id": map[string]any{"type": []string{"integer", "null"}, "description": "The sandbox template practical questions are checked in."},
		"title":       strSchema, "description": map[string]any{"type": "string", "description": "Markdown."},
		"description_html": renderedOf("description"), "time_limit_minutes": intSchema,
		"passing_score": map[string]any{"type": "integer", "description": "Percent of max_points needed to pass."},
		"max_attempts":  map[string]any{"type": "integer", "description": "0: unlimited."},
		"max_points":    intSchema, "question_count": intSchema, "has_practical": boolSchema,
	}
	questionProps = map[string]any{"id": intSchema, "position": intSchema, "kind": questionKind,
		"prompt": map[string]any{"type": "string", "description": "Markdown."}, "prompt_html": renderedOf("prompt"),
		"options": map[string]any{"type": "array", "items": strSchema,
			"description": "Choice questions. In an attempt (its start, GET /api/exams/attempts/{id}) in the order that attempt shows, which answers index from 0; in the exam's public view in the authored order."},
		"points": intSchema}
	examAttemptProps = map[string]any{"id": intSchema, "exam_id": intSchema, "user_id": intSchema, "status": attemptStatus,
		"started_at": tsSchema, "expires_at": tsSchema, "finished_at": nullableTS,
		"points": intSchema, "max_points": intSchema, "score": map[string]any{"type": "integer", "description": "Percent of max_points, rounded down."},
		"passed": boolSchema}
)

// renderedOf describes the *_html field of the Markdown field name.
func renderedOf(name string) map[string]any {
	return map[string]any{"type": "string", "description": "`" + name + "` rendered as lessons are (GitHub-flavoured Markdown) and sanitised: " +
		"HTML safe to insert into a page; empty when `" + name + "` is."}
}

func withProps(base map[string]any, extra map[string]any) map[string]any {
	out := maps.Clone(base)
	maps.Copy(out, extra)
	return out
}

var learningSchemas = map[string]any{
	"LabMachine": closed([]string{"name"}, map[string]any{"name": map[string]any{"type": "string", "description": "Its host name, which the lab's other machines resolve."}}),
	"AdminLabMachine": obj([]string{"name"}, map[string]any{"name": strSchema,
		"setup":    map[string]any{"type": "string", "description": "Runs as root in this machine at each start."},
		"solution": map[string]any{"type": "string", "description": "Typed into this machine's terminal as the learner; for admins and CI."}}),
	"AttemptMachine": obj([]string{"name", "container_id", "terminal_url"}, map[string]any{"name": strSchema,
		"container_id": map[string]any{"type": []string{"integer", "null"}, "description": "This machine's sandbox; null once removed."},
		"terminal_url": map[string]any{"type": []string{"string", "null"}, "description": "Path of this machine's terminal WebSocket."}}),
	"Task":    closed(keys(taskProps), taskProps),
	"Lab":     closed(keys(labProps), labProps),
	"LabList": arrayOf(ref("Lab")),
	"AdminTask": obj(append(keys(taskProps), "check"), withProps(taskProps, map[string]any{
		"check": map[string]any{"type": "string", "description": "Runs as root in the sandbox; exit 0 means passed; `FAIL: ` lines are shown to the learner."}})),
	"AdminLab": obj(append(keys(labProps), "owner_id", "published", "setup", "solution", "created_at", "updated_at"), withProps(labProps, map[string]any{
		"owner_id": ownerIDSchema, "published": publishedSchema, "setup": strSchema, "solution": strSchema, "tasks": arrayOf(ref("AdminTask")), "created_at": tsSchema, "updated_at": tsSchema,
		"machines": arrayOf(ref("AdminLabMachine"))})),
	"AdminLabList": arrayOf(ref("AdminLab")),
	"TaskInput": obj([]string{"title", "check"}, map[string]any{"title": strSchema, "description": strSchema, "hint": strSchema,
		"points": map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "default": 1}, "check": strSchema,
		"machine": map[string]any{"type": "string", "description": "Labs with machines: the machine whose name the check runs on (required there)."}}),
	"LabBody": obj(nil, map[string]any{
		"description": strSchema,
		"setup":       map[string]any{"type": "string", "description": "Runs as root in a fresh sandbox at each start (labs of one sandbox)."},
		"machines": map[string]any{"type": "array", "items": ref("AdminLabMachine"), "maxItems": 4,
			"description": "Replaces the machines: 2 to 4, each with its own setup and solution; [] for a lab of one sandbox. The template must make machines."},
		"solution":  map[string]any{"type": "string", "description": "Solves every task, run as the learner; for admins and CI."},
		"tasks":     map[string]any{"type": "array", "items": ref("TaskInput"), "maxItems": 50, "description": "Replaces the tasks; ids are kept by position."},
		"published": bodyPublishedSchema,
	}),
	"TaskResult": obj([]string{"task_id", "position", "title", "passed", "points", "feedback"}, map[string]any{
		"task_id": intSchema, "position": intSchema, "title": strSchema, "passed": boolSchema,
		"points": map[string]any{"type": "integer", "description": "Points earned."}, "feedback": feedback,
		"exit_code": map[string]any{"type": "integer", "description": "Admins only."}, "timed_out": map[string]any{"type": "boolean", "description": "Admins only."},
		"output": map[string]any{"type": "string", "description": "Admins only: the check's stdout and stderr."},
	}),
	"LabAttempt": obj([]string{"id", "laboratory_id", "user_id", "status", "container_id", "terminal_url", "machines", "started_at", "expires_at",
		"finished_at", "points", "max_points", "score", "passed", "checks", "last_check_at", "checking", "sandbox_removed_at", "tasks", "recording_id"}, map[string]any{
		"machines": map[string]any{"type": "array", "items": ref("AttemptMachine"),
			"description": "Labs with machines: each machine's sandbox and terminal, in the lab's order (the first is also container_id); empty for a lab of one sandbox."},
		"id": intSchema, "laboratory_id": intSchema, "user_id": intSchema, "status": attemptStatus,
		"container_id": map[string]any{"type": []string{"integer", "null"}, "description": "The sandbox provisioned for the attempt; null once deleted."},
		"terminal_url": map[string]any{"type": []string{"string", "null"}, "description": "Path of the sandbox's terminal WebSocket; add ?token=."},
		"started_at":   tsSchema, "expires_at": tsSchema, "finished_at": nullableTS,
		"points": intSchema, "max_points": intSchema, "score": map[string]any{"type": "integer", "description": "Percent of max_points, rounded down."},
		"passed": boolSchema, "checks": map[string]any{"type": "integer", "description": "Checks run so far."},
		"last_check_at": map[string]any{"type": []string{"string", "null"}, "format": "date-time", "description": "When the last check ended."},
		"checking":      map[string]any{"type": "boolean", "description": "A check of this attempt was running when this answer was made."},
		"sandbox_removed_at": map[string]any{"type": []string{"string", "null"}, "format": "date-time",
			"description": "When the attempt's sandbox was removed because the attempt ended (submitted or expired), so that it no longer counts against your sandbox quotas; null while it exists, or if you deleted it yourself."},
		"tasks": map[string]any{"type": "array", "items": ref("TaskResult"), "description": "The last check's or the submission's result per task; empty before the first check."},
		"recording_id": map[string]any{"type": []string{"integer", "null"},
			"description": "The latest recording of the attempt's terminal (GET /api/recordings/{id} serves it); null before a terminal was open a few seconds, or once the retention period deleted it."},
	}),

	"ExamSummary":     closed(keys(examSummaryProps), examSummaryProps),
	"ExamSummaryList": arrayOf(ref("ExamSummary")),
	"Question":        closed(keys(questionProps), questionProps),
	"Exam": closed(append(keys(examSummaryProps), "questions"), withProps(examSummaryProps, map[string]any{
		"questions": arrayOf(ref("Question"))})),
	"AdminQuestion": obj(append(keys(questionProps), "explanation", "explanation_html", "answer", "answers", "accept", "case_sensitive", "check", "solution"),
		withProps(questionProps, map[string]any{"explanation": map[string]any{"type": "string", "description": "Markdown."},
			"explanation_html": renderedOf("explanation"), "answer": nullableInt, "answers": arrayOf(intSchema),
			"accept": strList, "case_sensitive": boolSchema, "check": strSchema, "solution": strSchema})),
	"AdminExam": obj(append(keys(examSummaryProps), "owner_id", "published", "questions", "created_at", "updated_at"), withProps(examSummaryProps, map[string]any{
		"owner_id": ownerIDSchema, "published": publishedSchema, "questions": arrayOf(ref("AdminQuestion")), "created_at": tsSchema, "updated_at": tsSchema})),
	"AdminExamList": arrayOf(ref("AdminExam")),
	"QuestionInput": obj([]string{"kind", "prompt"}, map[string]any{
		"kind": questionKind, "prompt": strSchema, "options": strList, "points": map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "default": 1},
		"explanation":    map[string]any{"type": "string", "description": "Shown in the results; must not contain an accepted answer."},
		"answer":         map[string]any{"type": "integer", "description": "single_choice: the right option's index, from 0."},
		"answers":        map[string]any{"type": "array", "items": intSchema, "description": "multiple_choice: every right option's index."},
		"accept":         map[string]any{"type": "array", "items": strSchema, "description": "short_text: accepted answers (trimmed, whitespace collapsed)."},
		"case_sensitive": boolSchema,
		"check":          map[string]any{"type": "string", "description": "practical: runs as root in the learner's sandbox; exit 0 means passed."},
		"solution":       strSchema,
	}),
	"ExamBody": obj(nil, map[string]any{"description": strSchema, "published": bodyPublishedSchema,
		"questions": map[string]any{"type": "array", "items": ref("QuestionInput"), "maxItems": 100, "description": "Replaces the questions; ids are kept by position."}}),
	"ExamAttempt": closed(append(keys(examAttemptProps), "container_id", "terminal_url", "sandbox_notice", "questions", "draft_answers"), withProps(examAttemptProps, map[string]any{
		"draft_answers": map[string]any{"type": "array", "items": ref("Answer"),
			"description": "The answers saved so far with PUT /api/exams/attempts/{id}/draft (empty before the first save), in the submit's shape: a page puts them back in place on a reload or another device."},
		"container_id": map[string]any{"type": []string{"integer", "null"},
			"description": "The sandbox made fresh for this attempt, where its practical questions are graded; null when the exam has none (or the attempt began before attempts had their own)."},
		"terminal_url":   map[string]any{"type": []string{"string", "null"}, "description": "Path of that sandbox's terminal WebSocket; add ?token=."},
		"sandbox_notice": map[string]any{"type": []string{"string", "null"}, "description": "Says, for the learner, which sandbox the practical questions are graded in and that it is fresh."},
		"questions": map[string]any{"type": "array", "items": ref("Question"),
			"description": "The exam's questions, each choice question's options in the order this attempt shows them: answers give indexes in this order."}})),
	"Answer": obj([]string{"question_id"}, map[string]any{"question_id": intSchema,
		"choice": map[string]any{"type": "integer", "description": "single_choice only: the chosen option's index in the order the attempt shows (its `questions`)."},
		"choices": map[string]any{"type": "array", "items": intSchema,
			"description": "multiple_choice only: every chosen option's index in the order the attempt shows."},
		"text": map[string]any{"type": "string", "maxLength": 1000, "description": "short_text only."}}),
	"SubmitExamRequest": obj([]string{"answers"}, map[string]any{
		"answers": map[string]any{"type": "array", "items": ref("Answer"), "description": "At most one per question; practical questions need none."},
		"container_id": map[string]any{"type": "integer",
			"description": "Optional: the attempt's own sandbox (its container_id), where its practical questions are graded; another is 422. For an attempt begun without one: the sandbox to check them in (default: your last active running sandbox of the exam's template)."},
	}),
	"QuestionResult": obj([]string{"question_id", "position", "kind", "prompt", "prompt_html", "options", "correct", "points", "max_points",
		"explanation", "explanation_html", "feedback"}, map[string]any{
		"question_id": intSchema, "position": intSchema, "kind": questionKind, "correct": boolSchema,
		"prompt": map[string]any{"type": "string", "description": "Markdown."}, "prompt_html": renderedOf("prompt"),
		"explanation": map[string]any{"type": "string", "description": "Markdown."}, "explanation_html": renderedOf("explanation"),
		"options": map[string]any{"type": "array", "items": strSchema, "description": "Choice questions: the options in the order this attempt showed them."},
		"points":  intSchema, "max_points": intSchema, "feedback": feedback,
		"output": map[string]any{"type": "string", "description": "Admins only: a practical check's output."},
	}),
	"ExamResults": obj(append(keys(examAttemptProps), "exam_title", "questions"), withProps(examAttemptProps, map[string]any{
		"exam_title": strSchema, "questions": arrayOf(ref("QuestionResult"))})),
}

var (
	labAdminParams = []param{
		{name: "slug", schema: strSchema, desc: "Stable key for the lab's file."},
		{name: "title", schema: strSchema},
		{name: "module_id", schema: intSchema, desc: "The module (section) the lab belongs to; 0 detaches it."},
		{name: "template_id", schema: intSchema, desc: "The sandbox template a start provisions."},
		{name: "time_limit_minutes", schema: intSchema, desc: "1 to 600, default 60."},
		{name: "passing_score", schema: intSchema, desc: "Percent of points, 0 to 100, default 100."},
		publishedParam,
	}
	examAdminParams = []param{
		{name: "slug", schema: strSchema}, {name: "title", schema: strSchema},
		{name: "module_id", schema: intSchema, desc: "0 detaches the exam from its module."},
		{name: "template_id", schema: intSchema, desc: "Where practical questions are checked; required with practical questions."},
		{name: "time_limit_minutes", schema: intSchema, desc: "1 to 600, default 30."},
		{name: "passing_score", schema: intSchema, desc: "Percent of points, 0 to 100, default 70."},
		{name: "max_attempts", schema: intSchema, desc: "0 (unlimited, the default) to 100."},
		publishedParam,
	}
	cascadeParam = []param{{name: "cascade", schema: boolSchema, desc: "Also delete the learners' attempts."}}

	docExams     = op{tag: "exams", summary: "Exams (public): titles, limits and counts", status: 200, result: "ExamSummaryList"}
	docExam      = op{tag: "exams", summary: "An exam with its questions (public): never an answer, accepted text or script", status: 200, result: "Exam", errors: []int{404}}
	docExamStart = op{tag: "exams", summary: "Start an attempt: its questions in the order it shows, and a fresh sandbox for practical questions", status: 201, result: "ExamAttempt", errors: []int{404, 409, 503},
		desc: "Each attempt shows every choice question's options in an order drawn at its start; answers give indexes in that order. An exam with practical questions makes a sandbox for the attempt from its template (container_id, terminal_url, sandbox_notice), where they are graded; it replaces the sandbox of your previous exam attempt. 409 with `attempt_id` and its `expires_at` when an attempt is in progress; 409 when every allowed attempt is used, or when your sandbox quota leaves no room for the attempt's sandbox (the detail says what to stop or delete; no attempt is used); 503 without an engine or when the platform is at capacity. expires_at is started_at plus the time limit."}
	docExamAttempt = op{tag: "exams", summary: "An attempt of yours, in any state: its sandbox and its questions in the order it shows", status: 200, result: "ExamAttempt", errors: []int{404},
		desc: "What a client needs to carry on with an attempt it did not start (another tab, a reload: the 409 of a start names it). Another user's attempt is 404. An attempt past its deadline ends as expired on the way."}
	docExamSubmit = op{tag: "exams", summary: "Submit answers: graded once, at once", body: "SubmitExamRequest", status: 200, result: "ExamResults", errors: []int{404, 409, 503},
		desc: "Choice answers are indexes in the order the attempt shows; an answer whose shape does not fit its question's kind (`choices` on a single-choice question, `text` on a choice question...) is 422. Practical questions are checked by their script in the attempt's own sandbox (started again if the idle stop stopped it; one the learner deleted fails them). 409 after the deadline (the attempt ends as expired), when already submitted, or when no attempt is in progress; for an attempt begun without a sandbox of its own, also when a practical question finds no running sandbox (the attempt stays open)."}
	docExamResults = op{tag: "exams", summary: "Results of your attempt: score, passed, per question right or not and why", status: 200, result: "ExamResults", errors: []int{404, 409},
		desc: "Another user's attempt is 404. 409 while the attempt is in progress."}

	docLabs       = op{tag: "laboratories", summary: "Laboratories (public): tasks with titles, descriptions and hints", status: 200, result: "LabList"}
	docLab        = op{tag: "laboratories", summary: "A laboratory (public): never a script or solution", status: 200, result: "Lab", errors: []int{404}}
	docSectionLab = op{tag: "laboratories", summary: "The laboratory of a section (a lesson module)", status: 200, result: "Lab", errors: []int{404}}
	docLabStart   = op{tag: "laboratories", summary: "Start an attempt: provisions a sandbox and runs the lab's setup", status: 201, result: "LabAttempt", errors: []int{404, 409, 429, 503},
		desc: "The answer names the sandbox (container_id, terminal_url). The sandboxes of your ended lab attempts are removed first, so they do not count against your quotas. 409 with `attempt_id` and its `expires_at` when an attempt is in progress, or when your sandbox quota is reached; 429 with Retry-After past the starts of one laboratory allowed in 24 hours; 503 without an engine or when the platform is at capacity."}
	docLabCheck = op{tag: "laboratories", summary: "Check your progress now, without ending the attempt", status: 200, result: "LabAttempt", errors: []int{404, 409, 429, 503},
		desc: "Runs every task's check in the attempt's sandbox. Checks of one attempt never overlap: while one runs, and until the check interval has passed since it ended, 429 with Retry-After."}
	docLabSubmit = op{tag: "laboratories", summary: "Submit: check every task, end the attempt and grade it", status: 200, result: "LabAttempt", errors: []int{404, 409, 429, 503},
		desc: "Graded once: a concurrent second submit is 409. After the deadline 409, and the attempt ends as expired. 429 with Retry-After while a check of the attempt runs. Once graded, the attempt's sandbox is removed (`sandbox_removed_at`)."}
	docLabResults = op{tag: "laboratories", summary: "An attempt of yours, with its latest results", status: 200, result: "LabAttempt", errors: []int{404}}

	docAdminExams      = op{tag: "admin content", summary: "The exams the caller may change (an admin: every one), drafts included, with answers and scripts", status: 200, result: "AdminExamList"}
	docAdminExam       = op{tag: "admin content", summary: "An exam with answers and scripts (another author's: 403)", status: 200, result: "AdminExam", errors: []int{404}}
	docAdminCreateExam = op{tag: "admin content", summary: "Create an exam: scalars in the query, questions as a JSON or YAML body", body: "ExamBody", alsoYAML: true,
		status: 201, result: "AdminExam", errors: []int{409}, params: examAdminParams}
	docAdminUpdateExam = op{tag: "admin content", summary: "Update an exam (only what is given changes)", body: "ExamBody", alsoYAML: true, optionalBody: true,
		status: 200, result: "AdminExam", errors: []int{404, 409}, params: examAdminParams}
	docAdminDeleteExam = op{tag: "admin content", summary: "Delete an exam; one with attempts needs cascade=true", status: 200, result: "Deleted", errors: []int{404, 409}, params: cascadeParam}
	docAdminLabs       = op{tag: "admin content", summary: "The laboratories the caller may change (an admin: every one), drafts included, with scripts", status: 200, result: "AdminLabList"}
	docAdminLab        = op{tag: "admin content", summary: "A laboratory with its scripts (another author's: 403)", status: 200, result: "AdminLab", errors: []int{404}}
	docAdminCreateLab  = op{tag: "admin content", summary: "Create a laboratory: scalars in the query, tasks and scripts as a JSON or YAML body", body: "LabBody", alsoYAML: true,
		status: 201, result: "AdminLab", errors: []int{409}, params: labAdminParams}
	docAdminUpdateLab = op{tag: "admin content", summary: "Update a laboratory (only what is given changes)", body: "LabBody", alsoYAML: true, optionalBody: true,
		status: 200, result: "AdminLab", errors: []int{404, 409}, params: labAdminParams}
	docAdminDeleteLab = op{tag: "admin content", summary: "Delete a laboratory; one with attempts needs cascade=true", status: 200, result: "Deleted", errors: []int{404, 409}, params: cascadeParam}
)
