package attempt

import (
	"context"

	"tuxlab/internal/actor"
	"tuxlab/internal/sandbox"
)

// Sandboxes is what exam and lab attempts need of the sandbox service to
// give an attempt a sandbox of its own and take it away again; each domain
// adds how it runs its checks.
type Sandboxes interface {
	Create(ctx context.Context, a actor.Actor, n sandbox.NewContainer) (*sandbox.Container, error)
	Get(ctx context.Context, a actor.Actor, id int64) (*sandbox.Container, error)
	// Resume returns the sandbox running, started again if it was stopped;
	// nil when it is gone.
	Resume(ctx context.Context, a actor.Actor, id int64) (*sandbox.Container, error)
	Start(ctx context.Context, a actor.Actor, id int64) (*sandbox.Container, error)
	Delete(ctx context.Context, a actor.Actor, id int64) error
}

// Tally grades n items (questions, tasks) with grade, which returns item
// i's result and the points it earned, and adds the points up.
func Tally[R any](n int, grade func(i int) (R, int)) (results []R, points int) {
	results = make([]R, n)
	for i := range results {
		var p int
		results[i], p = grade(i)
		points += p
	}
	return results, points
}
