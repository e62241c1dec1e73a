package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestPanicBecomes500WithRequestID(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewJSONHandler(&logs, nil)), maxBody: 1 << 20}
	s.metrics = newMetrics(prometheus.NewRegistry())
	h := s.observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic("boom") }))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api/anything?password=hunter2", nil)
	req.Header.Set("X-Request-ID", "req-42")
	h.ServeHTTP(rec, req)
	if rec.Code != 500 {
		t.Fatalf("status %d", rec.Code)
	}
	var body map[string]any
	json.Unmarshal(rec.Body.Bytes(), &body)
	if body["detail"] != "Internal server error" {
		t.Fatalf("body %s", rec.Body)
	}
	out := logs.String()
	if !strings.Contains(out, `"panic":"boom"`) || !strings.Contains(out, `"request_id":"req-42"`) {
		t.Fatalf("panic not logged with its request id: %s", out)
	}
	if strings.Contains(out, "hunter2") {
		t.Fatal("the query string reached the log")
	}
}
