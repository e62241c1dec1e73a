package httpapi_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"tuxlab/internal/apitest"
)

// TestMain checks, after a full run, that every documented operation was
// exercised with a success status: the OpenAPI document and the tests walk
// the same routes.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && !testing.Short() {
		if missing := apitest.Uncovered(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: documented operations no test called successfully: %v\n", missing)
			code = 1
		}
	}
	// No script, solution or correct answer reached a student or an anonymous
	// caller anywhere in the run (also when only some tests ran).
	if code == 0 {
		leaks, searched := apitest.Leaks()
		for _, l := range leaks {
			fmt.Fprintf(os.Stderr, "FAIL: leaked to a learner: %s\n", l)
		}
		if len(leaks) > 0 {
			code = 1
		} else if testing.Verbose() {
			fmt.Fprintf(os.Stderr, "leak watch: %d student and anonymous responses searched\n", searched)
		}
	}
	os.Exit(code)
}

// statusesOf lists the status of each response.
func statusesOf(rs []*apitest.Response) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.Status
	}
	return out
}
