package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"tuxlab/content"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/httpapi"
	"tuxlab/internal/logging"
	"tuxlab/internal/store"
)

// BenchmarkServeAuthMe measures the server's own work for GET /api/auth/me,
// one request at a time and without a network: the handler stack from the
// request id to the JSON body, with the production logger writing its access
// line to /dev/null (real writes, as to a file). ns/op is the CPU a request
// costs the server beyond what net/http itself spends; profile it with
//
//	go test -run - -bench ServeAuthMe -cpuprofile cpu.out ./internal/httpapi/
func BenchmarkServeAuthMe(b *testing.B) {
	e := apitest.New(b, store.SQLite)
	u := e.CreateUser("bench", auth.RoleStudent)
	benchServe(b, productionServer(b, e), "/api/auth/me", u.Token)
}

// BenchmarkServeLessonModules is BenchmarkServeAuthMe for GET
// /api/lessons/modules on the bundled curriculum.
func BenchmarkServeLessonModules(b *testing.B) {
	e := apitest.New(b, store.SQLite)
	if _, _, err := e.App.Lessons.ImportIfEmpty(b.Context(), content.Curriculum()); err != nil {
		b.Fatal(err)
	}
	u := e.CreateUser("bench", auth.RoleStudent)
	benchServe(b, productionServer(b, e), "/api/lessons/modules", u.Token)
}

// productionServer is e's server as tuxlab serve builds it, with its JSON
// access log written (in batches, as tuxlab serve does) to /dev/null instead
// of apitest's discarding logger.
func productionServer(b *testing.B, e *apitest.Env) http.Handler {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { null.Close() })
	a := e.App
	return httpapi.New(httpapi.Deps{
		Auth: a.Auth, Lessons: a.Lessons, Sandboxes: a.Sandboxes, Terminals: a.Terminals, Labs: a.Labs,
		Exams: a.Exams, Profiles: a.Profiles, DB: a.DB, Log: logging.New(logging.NewWriter(null), slog.LevelInfo),
		MaxBodyBytes: a.Config.MaxBodyBytes, AccessLogLevel: slog.LevelInfo,
	})
}

func benchServe(b *testing.B, h http.Handler, path, token string) {
	req := httptest.NewRequest("GET", path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.RemoteAddr = "127.0.0.1:40000"
	w := &discardWriter{header: http.Header{}}
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		clear(w.header)
		w.status = 0
		h.ServeHTTP(w, req) // the stack copies the request before changing it
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
	// CPU time, unlike ns/op, hardly moves when other processes share the cores.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// discardWriter is a ResponseWriter that keeps only the status, so the
// benchmark measures the server rather than a recorder.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

// processCPU is the CPU time this process has used, user and system, in all threads.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
