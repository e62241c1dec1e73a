package store

import (
	"context"
	"database/sql"
)

// Querier returns what the store reads and writes through with ctx: the
// transaction ctx carries from InTx, or the pool. Tests read with it what a
// transaction sees before it ends.
func (s *DB) Querier(ctx context.Context) interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
} {
	return s.q(ctx)
}
