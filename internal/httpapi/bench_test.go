package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"tuxlab/content"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/store"
)

// BenchmarkAuthMe measures GET /api/auth/me with a valid token through a real
// HTTP server and the whole middleware stack (token check and a user read on
// every request), with concurrent clients. It reports requests per second and
// the 50th and 99th percentile latency.
//
//	go test -run - -bench AuthMe -benchtime 20000x ./internal/httpapi/
func BenchmarkAuthMe(b *testing.B) {
	e := apitest.New(b, store.SQLite)
	u := e.CreateUser("bench", auth.RoleStudent)
	srv := httptest.NewServer(e.App.Server) // without the test-only OpenAPI validation
	defer srv.Close()
	benchGet(b, srv, "/api/auth/me", u.Token)
}

// BenchmarkLessonModules measures GET /api/lessons/modules on the bundled
// curriculum with progress for the caller.
func BenchmarkLessonModules(b *testing.B) {
	e := apitest.New(b, store.SQLite)
	if _, _, err := e.App.Lessons.ImportIfEmpty(b.Context(), content.Curriculum()); err != nil {
		b.Fatal(err)
	}
	u := e.CreateUser("bench", auth.RoleStudent)
	srv := httptest.NewServer(e.App.Server)
	defer srv.Close()
	benchGet(b, srv, "/api/lessons/modules", u.Token)
}

func benchGet(b *testing.B, srv *httptest.Server, path, token string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var (
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, b.N)
	)
	b.SetParallelism(8) // 8 × GOMAXPROCS concurrent clients
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		local := make([]time.Duration, 0, 1024)
		for pb.Next() {
			req, _ := http.NewRequest("GET", srv.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			local = append(local, time.Since(t0))
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
		mu.Lock()
		latencies = append(latencies, local...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(latencies)
	if len(latencies) == 0 {
		return
	}
	pct := func(p float64) float64 {
		return float64(latencies[int(float64(len(latencies)-1)*p)].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "req/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
