package apitest

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The watch must see a secret in a student's response, in raw and in
// JSON-escaped form, and must not look at an admin's.
func TestLeakWatchFindsSecrets(t *testing.T) {
	secret := "#!/bin/sh\necho \"FAIL: leak-watch-self-test\"\n"
	RegisterSecret(secret, "a self-test script")
	markAdmin("admin-token")

	admin := httptest.NewRequest("GET", "/api/admin/laboratories/1", nil)
	admin.Header.Set("Authorization", "Bearer admin-token")
	keep(admin, 200, []byte(`{"check":`+`"`+jsonEscaped(strings.TrimSpace(secret))+`"}`))
	if found, _ := Leaks(); len(found) != 0 {
		t.Fatalf("an admin's response counted as a leak: %v", found)
	}

	student := httptest.NewRequest("GET", "/api/laboratories/1", nil)
	student.Header.Set("Authorization", "Bearer student-token")
	keep(student, 200, []byte(`{"tasks":[{"hint":"`+jsonEscaped(strings.TrimSpace(secret))+`"}]}`))
	found, searched := Leaks()
	if len(found) != 1 || !strings.Contains(found[0], "GET /api/laboratories/1") || searched != 1 {
		t.Fatalf("found %v in %d responses", found, searched)
	}
}
