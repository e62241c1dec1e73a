package httpapi

import "testing"

func TestLoggedPathLeavesTicketsOut(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/preview/3/80/~1.99.mac/css/a.css", "/preview/3/80/~TICKET/css/a.css"},
		{"/preview/3/80/~1.99.mac", "/preview/3/80/~TICKET"},
		{"/preview/3/80/", "/preview/3/80/"},
		{"/api/auth/me", "/api/auth/me"},
	} {
		if got := loggedPath(tc.in); got != tc.want {
			t.Errorf("loggedPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
