package httpapi

import "maps"

// The OpenAPI schemas and operations of the learner's progress and exam drafts.

func init() { maps.Copy(schemas, progressSchemas) }

var progressSchemas = map[string]any{
	"LabAttemptSummary": closed([]string{"id", "status", "container_id", "started_at", "expires_at", "finished_at", "points", "max_points",
		"score", "passed", "tasks"}, map[string]any{
		"id": intSchema, "status": attemptStatus,
		"container_id": map[string]any{"type": []string{"integer", "null"}, "description": "The attempt's sandbox while it exists (an attempt in progress)."},
		"started_at":   tsSchema, "expires_at": tsSchema, "finished_at": nullableTS,
		"points": intSchema, "max_points": intSchema, "score": map[string]any{"type": "integer", "description": "Percent of max_points, rounded down."},
		"passed": boolSchema,
		"tasks": map[string]any{"type": "array", "description": "Per task whether the last check or the submission passed it; empty before the first check.",
			"items": closed([]string{"task_id", "position", "passed"}, map[string]any{"task_id": intSchema, "position": intSchema, "passed": boolSchema})},
	}),
	"LabProgress": closed([]string{"laboratory_id", "module_id", "title", "attempts", "passed", "best_score", "latest", "best"}, map[string]any{
		"laboratory_id": intSchema, "module_id": nullableInt, "title": strSchema,
		"attempts":   map[string]any{"type": "integer", "description": "Attempts you started."},
		"passed":     map[string]any{"type": "boolean", "description": "Some attempt of yours passed."},
		"best_score": map[string]any{"type": []string{"integer", "null"}, "description": "The best score of your ended attempts; null before one ended."},
		"latest": map[string]any{"oneOf": []any{ref("LabAttemptSummary"), map[string]any{"type": "null"}},
			"description": "Your attempt started last, in any state: an attempt in progress to resume (GET /api/laboratories/attempts/{id}/results gives it whole), or the last ended one."},
		"best": map[string]any{"oneOf": []any{ref("LabAttemptSummary"), map[string]any{"type": "null"}},
			"description": "Your ended attempt with the highest score (the earliest of equals)."},
	}),
	"ExamProgress": closed([]string{"exam_id", "module_id", "title", "max_attempts", "attempts_used", "attempts_left", "best_score",
		"best_attempt_id", "passed", "in_progress_attempt_id", "in_progress_expires_at"}, map[string]any{
		"exam_id": intSchema, "module_id": nullableInt, "title": strSchema,
		"max_attempts":  map[string]any{"type": "integer", "description": "0: unlimited."},
		"attempts_used": map[string]any{"type": "integer", "description": "Attempts you started, in any state."},
		"attempts_left": map[string]any{"type": []string{"integer", "null"}, "description": "Attempts you may still start; null when unlimited."},
		"best_score":    map[string]any{"type": []string{"integer", "null"}, "description": "The best score of your ended attempts; null before one ended."},
		"best_attempt_id": map[string]any{"type": []string{"integer", "null"},
			"description": "That attempt (its results: GET /api/exams/attempts/{id}/results)."},
		"passed":                 map[string]any{"type": "boolean", "description": "Some attempt of yours passed."},
		"in_progress_attempt_id": map[string]any{"type": []string{"integer", "null"}, "description": "Your attempt in progress, to resume with GET /api/exams/attempts/{id}."},
		"in_progress_expires_at": nullableTS,
	}),
	"LearnerProgress": closed([]string{"laboratories", "exams"}, map[string]any{
		"laboratories": arrayOf(ref("LabProgress")), "exams": arrayOf(ref("ExamProgress")),
	}),
	"ExamDraftRequest": obj([]string{"answers"}, map[string]any{
		"answers": map[string]any{"type": "array", "items": ref("Answer"), "description": "The answers given so far, as the submit takes them: at most one per question."},
	}),
	"ExamDraft": closed([]string{"attempt_id", "draft_answers", "saved_at"}, map[string]any{
		"attempt_id": intSchema, "draft_answers": arrayOf(ref("Answer")), "saved_at": tsSchema,
	}),
}

var (
	docProgress = op{tag: "progress", summary: "Your standing in every laboratory and exam: latest and best attempt, attempts used and left, the attempt in progress",
		status: 200, result: "LearnerProgress",
		desc: "Only your own attempts. Every laboratory and exam is listed, with nulls where you have no attempt. Your attempts past their deadline end as expired on the way, and the sandboxes of your ended laboratory attempts are removed, so they no longer count against your quotas."}
	docExamDraft = op{tag: "exams", summary: "Save the answers given so far in your attempt in progress", body: "ExamDraftRequest", status: 200, result: "ExamDraft",
		errors: []int{404, 409},
		desc:   "Replaces the attempt's draft, which GET /api/exams/attempts/{id} returns as `draft_answers`, so a reload, another tab or another device resumes with the answers in place. Validated as a submit's answers are (422 naming the field). Another user's attempt is 404. 409 once the attempt is submitted, being graded or past its deadline (it then ends as expired). The draft is not a submission: the submit grades the answers it sends, and an attempt that runs out of time is graded from its draft (see docs/labs-and-exams.md)."}
)
