package httpapi

import "maps"

// The OpenAPI schemas and operations of the dashboard.

func init() { maps.Copy(schemas, dashboardSchemas) }

var tzParam = param{name: "tz", schema: map[string]any{"type": "string", "default": "UTC"},
	desc: "IANA time zone the days are counted in, e.g. Europe/Berlin."}

var dashboardSchemas = map[string]any{
	"DashboardStats": obj([]string{"themes", "modules", "labs", "exams", "sandboxes_running", "streak", "last_active_at"}, map[string]any{
		"themes": obj([]string{"completed", "total", "percent"}, map[string]any{"completed": intSchema, "total": intSchema,
			"percent": map[string]any{"type": "integer", "description": "Rounded down."}}),
		"modules": arrayOf(obj([]string{"module_id", "title", "completed", "total", "percent"}, map[string]any{
			"module_id": intSchema, "title": strSchema, "completed": intSchema, "total": intSchema, "percent": intSchema})),
		"labs": obj([]string{"passed", "attempted"}, map[string]any{
			"passed": map[string]any{"type": "integer", "description": "Laboratories with at least one passed submission."}, "attempted": intSchema}),
		"exams": obj([]string{"passed", "attempted", "best"}, map[string]any{"passed": intSchema, "attempted": intSchema,
			"best": arrayOf(obj([]string{"exam_id", "title", "best_score", "passed", "attempts"}, map[string]any{
				"exam_id": intSchema, "title": strSchema, "best_score": intSchema, "passed": boolSchema, "attempts": intSchema}))}),
		"sandboxes_running": intSchema,
		"streak": obj([]string{"current", "longest"}, map[string]any{
			"current": map[string]any{"type": "integer", "description": "Days in a row with activity up to today, or up to yesterday when today has none yet."},
			"longest": intSchema}),
		"last_active_at": nullableTS,
	}),
	"ActivityEvent": obj([]string{"id", "kind", "at", "subject_id", "title", "module_id", "score", "passed"}, map[string]any{
		"id": intSchema, "kind": map[string]any{"type": "string", "enum": []string{"theme_completed", "sandbox_created", "lab_started",
			"lab_checked", "lab_submitted", "exam_started", "exam_submitted", "profile_updated", "password_changed", "avatar_changed"}},
		"at": tsSchema, "subject_id": map[string]any{"type": []string{"integer", "null"}, "description": "The theme, sandbox, laboratory or exam."},
		"title": strSchema, "module_id": nullableInt, "score": nullableInt, "passed": map[string]any{"type": []string{"boolean", "null"}},
	}),
	"ActivityList": arrayOf(ref("ActivityEvent")),
	"SubjectStats": obj([]string{"id", "title", "attempts", "finished", "passed", "pass_rate"}, map[string]any{
		"id": intSchema, "title": strSchema, "attempts": intSchema,
		"finished":  map[string]any{"type": "integer", "description": "Submitted or expired."},
		"passed":    intSchema,
		"pass_rate": map[string]any{"type": "integer", "description": "Percent of finished attempts that passed, rounded down."}}),
	"ThemeCount": obj([]string{"theme_id", "title", "completions"}, map[string]any{"theme_id": intSchema, "title": strSchema, "completions": intSchema}),
	"LearningStats": obj([]string{"active_users_7d", "active_users_30d", "sandboxes_by_status", "exams", "laboratories",
		"most_completed_themes", "least_completed_themes"}, map[string]any{
		"active_users_7d":  map[string]any{"type": "integer", "description": "Users with any activity in the last 7 days."},
		"active_users_30d": intSchema,
		"sandboxes_by_status": obj([]string{"creating", "running", "stopped", "error"}, map[string]any{
			"creating": intSchema, "running": intSchema, "stopped": intSchema, "error": intSchema}),
		"exams": arrayOf(ref("SubjectStats")), "laboratories": arrayOf(ref("SubjectStats")),
		"most_completed_themes": arrayOf(ref("ThemeCount")), "least_completed_themes": arrayOf(ref("ThemeCount")),
	}),
	"Analytics": obj([]string{"from", "to", "tz", "days", "completions_by_module", "score_history", "minutes_in_window", "minutes_total"}, map[string]any{
		"from": map[string]any{"type": "string", "format": "date"}, "to": map[string]any{"type": "string", "format": "date"}, "tz": strSchema,
		"days": arrayOf(obj([]string{"date", "events"}, map[string]any{"date": map[string]any{"type": "string", "format": "date"}, "events": intSchema})),
		"completions_by_module": arrayOf(obj([]string{"module_id", "title", "completed", "total"}, map[string]any{
			"module_id": intSchema, "title": strSchema, "completed": intSchema, "total": intSchema})),
		"score_history": arrayOf(obj([]string{"kind", "subject_id", "title", "finished_at", "status", "score", "passed"}, map[string]any{
			"kind": map[string]any{"type": "string", "enum": []string{"exam", "lab"}}, "subject_id": intSchema, "title": strSchema,
			"finished_at": tsSchema, "status": map[string]any{"type": "string", "enum": []string{"submitted", "expired"}},
			"score": intSchema, "passed": boolSchema})),
		"minutes_in_window": map[string]any{"type": "integer", "description": "Estimated: completed themes' estimated minutes plus finished attempts' durations (each capped at its time limit)."},
		"minutes_total":     intSchema,
	}),
}

var (
	docDashboardStats = op{tag: "dashboard", summary: "Your progress: themes, modules, labs passed, exams passed and best scores, running sandboxes, streaks",
		status: 200, result: "DashboardStats", params: []param{tzParam}}
	docDashboardActivity = op{tag: "dashboard", summary: "What you did, newest first, paginated", status: 200, result: "ActivityList", paged: true,
		params: append([]param{{name: "kind", schema: strSchema, desc: "Only this kind of activity."}}, pageParams...)}
	docDashboardAnalytics = op{tag: "dashboard", summary: "Activity per day over a window, completions per module, score history, time spent",
		status: 200, result: "Analytics", params: []param{
			{name: "days", schema: map[string]any{"type": "integer", "minimum": 1, "maximum": 366, "default": 30}, desc: "The window: the last N days, today included."},
			tzParam}}
)
