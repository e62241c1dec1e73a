package apitest

import (
	"bytes"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// The leak watch: every response a student or an anonymous caller gets in the
// whole run is kept, and every script, solution and correct answer a test
// authors is registered as a secret; Leaks reports any secret found in any of
// those responses. Admins' responses are not kept: they may show everything.
var leakWatch = struct {
	sync.Mutex
	adminTokens map[string]bool
	secrets     map[string]string // secret → what it is
	bodies      []keptBody
	size        int
}{adminTokens: map[string]bool{}, secrets: map[string]string{}}

type keptBody struct {
	what string
	body []byte
}

// maxKept bounds the memory the watch takes; a run that exceeds it fails.
const maxKept = 512 << 20

func markAdmin(token string) {
	leakWatch.Lock()
	defer leakWatch.Unlock()
	leakWatch.adminTokens[token] = true
}

// RegisterSecret registers text that no student or anonymous response may contain:
// a script, a solution, an accepted answer.
func RegisterSecret(text, what string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	leakWatch.Lock()
	defer leakWatch.Unlock()
	leakWatch.secrets[text] = what
}

// keep records the response to r unless an admin asked.
func keep(r *http.Request, status int, body []byte) {
	token := r.URL.Query().Get("token")
	if scheme, t, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		token = strings.TrimSpace(t)
	}
	leakWatch.Lock()
	defer leakWatch.Unlock()
	if leakWatch.adminTokens[token] || len(body) == 0 {
		return
	}
	leakWatch.size += len(body)
	if leakWatch.size > maxKept {
		return
	}
	leakWatch.bodies = append(leakWatch.bodies, keptBody{what: fmt.Sprintf("%s %s (%d)", r.Method, r.URL.Path, status), body: bytes.Clone(body)})
}

// Leaks lists every registered secret found in a student's or anonymous
// caller's response, and how many responses were searched.
func Leaks() (found []string, searched int) {
	leakWatch.Lock()
	defer leakWatch.Unlock()
	if leakWatch.size > maxKept {
		return []string{fmt.Sprintf("the leak watch kept more than %d MiB of responses; raise maxKept", maxKept>>20)}, len(leakWatch.bodies)
	}
	for secret, what := range leakWatch.secrets {
		for _, b := range leakWatch.bodies {
			// JSON escapes newlines and quotes: look for the encoded form too.
			if bytes.Contains(b.body, []byte(secret)) || bytes.Contains(b.body, []byte(jsonEscaped(secret))) {
				found = append(found, fmt.Sprintf("%s in the response to %s", what, b.what))
			}
		}
	}
	sort.Strings(found)
	return found, len(leakWatch.bodies)
}

func jsonEscaped(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\r", `\r`, "<", `\u003c`, ">", `\u003e`, "&", `\u0026`)
	return r.Replace(s)
}
