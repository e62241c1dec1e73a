package httpapi

import (
	"fmt"
	"maps"

	"tuxlab/internal/share"
	"tuxlab/internal/terminal"
)

// The OpenAPI schemas and operations of shared terminals (docs/terminal.md,
// "Shared terminals").

func init() { maps.Copy(schemas, shareSchemas) }

var shareMode = map[string]any{"type": "string", "enum": []string{string(share.Read), string(share.Write)}}

var shareSchemas = map[string]any{
	"NewShare": map[string]any{"type": "object", "properties": map[string]any{
		"mode": map[string]any{"type": "string", "enum": []string{string(share.Read), string(share.Write)}, "default": string(share.Read),
			"description": "read: guests only watch; write: guests may type once you allow it (PATCH typing)."},
		"minutes": map[string]any{"type": "integer", "minimum": share.MinMinutes, "maximum": share.MaxMinutes, "default": share.DefaultMinutes,
			"description": "How long the link works."}}},
	"SharePatch": obj([]string{"typing"}, map[string]any{"typing": map[string]any{"type": "boolean",
		"description": "Let the guests of a write share type now (true), or stop them (false). A read share refuses true (422)."}}),
	"Watcher": obj([]string{"share_id", "name", "typing"}, map[string]any{"share_id": intSchema,
		"name": map[string]any{"type": "string", "description": "The guest's username."}, "typing": boolSchema}),
	"Share": obj([]string{"id", "mode", "typing", "expires_at", "created_at", "watchers"}, map[string]any{
		"id": intSchema, "mode": shareMode, "typing": map[string]any{"type": "boolean", "description": "The guests may type now."},
		"expires_at": tsSchema, "created_at": tsSchema,
		"watchers": map[string]any{"type": "array", "items": ref("Watcher"), "description": "Who watches through this share now (this server's sockets)."},
		"token":    map[string]any{"type": "string", "description": "Only in the answer that created the share: the guests' credential, never shown again (stored hashed)."},
		"link":     map[string]any{"type": "string", "description": "Only in the answer that created the share: the page that watches, relative to the site (/watch#TOKEN: the token stays out of requests and logs)."}}),
	"ShareList": arrayOf(ref("Share")),
}

var (
	docCreateShare = op{tag: "sandboxes", summary: "Share the terminal of your sandbox: a link for guests to watch it", status: 201, result: "Share", body: "NewShare", optionalBody: true, errors: []int{404, 409},
		desc: fmt.Sprintf("Owner only: another user's sandbox is 404, also for an admin. 409 past %d live shares on one sandbox. The token is in this answer only.", share.MaxPerSandbox)}
	docListShares = op{tag: "sandboxes", summary: "The live shares of your sandbox, with who watches now", status: 200, result: "ShareList", errors: []int{404}}
	docPatchShare = op{tag: "sandboxes", summary: "Let the guests of a write share type, or stop them", status: 200, result: "Share", body: "SharePatch", errors: []int{404},
		desc: "Takes effect at once for the guests watching."}
	docDeleteShare = op{tag: "sandboxes", summary: "End a share: its link stops working and its guests' sockets close at once", status: 200, result: "Deleted", errors: []int{404}}
	docWatch       = op{tag: "sandboxes", summary: "Watch a shared terminal (WebSocket), as any signed-in user with a share's token", status: 101, errors: []int{401, 403, 404, 409, 426},
		params: []param{
			{name: "share", schema: strSchema, required: true, desc: "The share's token (the part of its link after #)."},
			{name: "token", schema: strSchema, desc: "The guest's access token, for clients that can set no header and hold no session cookie (as on /ws/terminal)."},
		},
		desc: fmt.Sprintf("The guest watches the owner's terminal on the share's sandbox (the one a socket attached to last): first {\"type\":\"watching\",\"owner\":NAME,\"typing\":BOOL,\"container_id\":ID} (ID: the shared sandbox, whose ports the guest may preview at /preview/ID/PORT/?share=TOKEN), then the output kept, then the live output as binary frames. "+
			"Binary frames from the guest reach the shell only while the share lets it type ({\"type\":\"typing\",\"typing\":BOOL} tells a change); otherwise they are dropped with one {\"type\":\"error\",\"detail\":...}. Resizes are ignored. "+
			"The socket closes normally (1000) with the reason when the owner ends the share, the share expires, or the terminal ends. Refusals as on /ws/terminal: 4404 for an unknown, ended or expired token, 4409 when the owner has no terminal open or %d guests watch through the share already. See docs/terminal.md.", terminal.MaxWatchersPerShare)}
)
