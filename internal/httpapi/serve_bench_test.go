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
	"tuxlab/internal/app"
	"tuxlab/internal/auth"
	"tuxlab/internal/httpapi"
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
		Exams: a.Exams, Profiles: a.Profiles, DB: a.DB, Log: app.NewLogger(app.NewLogWriter(null), slog.LevelInfo),
		MaxBodyBytes: a.Config.MaxBodyBytes, AccessLogLevel: slog.LevelInfo,
	})
}

func benchServe(b *testing.B, h http.Handler, path, token string) {
	req := httptest.NewRequest("GET", path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.RemoteAddr = "127.0.0.1:40000"
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req.Clone(req.Context()))
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	// CPU time, unlike ns/op, hardly moves when other processes share the cores.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time this process has used, user and system, in all threads.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
