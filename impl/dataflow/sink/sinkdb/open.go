package sinkdb

import (
	"context"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
	"strings"
)

// Open opens the store url names: a PostgreSQL URL (postgres:// or
// postgresql://), else an SQLite database file (a path, or sqlite:path).
func Open(ctx context.Context, url string, cfg Config) (sink.Store, error) {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		return OpenPostgres(ctx, url, cfg)
	}
	return OpenSQLite(ctx, strings.TrimPrefix(url, "sqlite:"), cfg)
}
