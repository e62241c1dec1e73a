package httpapi

import "maps"

// The OpenAPI schemas and operations of terminal recordings (docs/terminal.md, "Recordings").

func init() { maps.Copy(schemas, recordingSchemas) }

var recordingSchemas = map[string]any{
	"Recording": obj([]string{"id", "user_id", "container_id", "container_name", "attempt_kind", "attempt_id", "width", "height",
		"started_at", "ended_at", "bytes", "truncated", "url"}, map[string]any{
		"id": intSchema, "user_id": map[string]any{"type": "integer", "description": "The sandbox's owner."},
		"container_id":   map[string]any{"type": "integer", "description": "The sandbox recorded; it may have been deleted since (a lab removes its attempt's sandbox once graded)."},
		"container_name": strSchema,
		"attempt_kind": map[string]any{"type": []string{"string", "null"}, "enum": []any{"lab", "exam", nil},
			"description": "The kind of attempt whose sandbox it was, when the terminal opened during one; null for free play."},
		"attempt_id": map[string]any{"type": []string{"integer", "null"}},
		"width":      map[string]any{"type": "integer", "description": "The terminal's columns when it opened (resizes are events of the cast)."},
		"height":     intSchema,
		"started_at": tsSchema,
		"ended_at":   map[string]any{"type": []string{"string", "null"}, "format": "date-time", "description": "Null while the session runs."},
		"bytes":      map[string]any{"type": "integer", "description": "The size of the events stored so far (written every few seconds while the session runs)."},
		"truncated":  map[string]any{"type": "boolean", "description": "The session printed more than the recording keeps (TUXLAB_RECORDING_MAX_BYTES): what came after was dropped."},
		"url":        map[string]any{"type": "string", "description": "The cast: GET it for application/x-asciicast."},
	}),
	"RecordingList": arrayOf(ref("Recording")),
}

var (
	docMyRecordings = op{tag: "recordings", summary: "Your terminal recordings, newest first", status: 200, result: "RecordingList",
		desc: "Every recording of your sandboxes' terminals, those of deleted sandboxes included, until the retention period (TUXLAB_RECORDING_RETENTION, 30 days) deletes them."}
	docSandboxRecordings = op{tag: "recordings", summary: "The terminal recordings of a sandbox, newest first", status: 200, result: "RecordingList", errors: []int{404},
		desc: "For the sandbox's owner, an admin, and the instructors of a class the owner is in; anyone else gets 404 as for a sandbox that does not exist. A deleted sandbox's recordings stay listed here."}
	docRecordingCast = op{tag: "recordings", summary: "A recording as an asciicast v2 file", status: 200, media: "application/x-asciicast", errors: []int{404},
		desc: "A header line (version 2, width, height, timestamp, title), then one JSON array per event: [seconds, \"o\", output] or [seconds, \"r\", \"COLSxROWS\"]. Output only: what is typed shows as the terminal echoes it, so a password typed at a prompt that does not echo is not in it. Same access as the sandbox's list."}
	docDeleteRecording = op{tag: "recordings", summary: "Delete one of your recordings", status: 200, result: "Deleted", errors: []int{404},
		desc: "The owner (or an admin) only; an instructor who may replay it gets 404."}
)
