package sinkdb

import (
	"context"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/dataflow/sink/pgtest"
)

// store is a Store under test and how its store aborts a pre-committed
// transaction on its own (a timeout, an administrator).
type store struct {
	sink.Store
	storeAbort func(t *testing.T, snap int)
	reopen     func(t *testing.T) store // the same database, opened again
}

// stores opens a fresh store of each kind for t: SQLite in a temporary
// file, PostgreSQL in a new database of the shared real server.
// Under -short only SQLite: starting the PostgreSQL server is most of
// the package's time (make test runs both).
func stores(*testing.T) map[string]func(t *testing.T) store {
	m := map[string]func(t *testing.T) store{
		"sqlite": func(t *testing.T) store {
			return openSQLiteStore(t, filepath.Join(t.TempDir(), "out.db"))
		},
		"postgres": func(t *testing.T) store {
			return openPostgresStore(t, pgtest.Shared(t))
		},
	}
	if testing.Short() {
		delete(m, "postgres")
	}
	return m
}

func openSQLiteStore(t *testing.T, path string) store {
	s, err := OpenSQLite(context.Background(), path, Config{Job: "j"})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return store{s, func(t *testing.T, snap int) {
		_, err := s.DB().Exec("DELETE FROM mw_output_prepared WHERE job = 'j' AND snap = ?", snap)
		require.NoError(t, err)
	}, func(t *testing.T) store { return openSQLiteStore(t, path) }}
}

func openPostgresStore(t *testing.T, url string) store {
	ctx := context.Background()
	s, err := OpenPostgres(ctx, url, Config{Job: "j"})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return store{s, func(t *testing.T, snap int) {
		c, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "ROLLBACK PREPARED '"+s.GID(snap)+"'")
		require.NoError(t, err)
	}, func(t *testing.T) store { return openPostgresStore(t, url) }}
}

func recs(from, to int) []sink.Record {
	var r []sink.Record
	for i := from; i <= to; i++ {
		r = append(r, sink.Record{Src: 0, I: i, Val: int64(10 * i)})
	}
	return r
}

// counts is how many times each record is in the store's output.
func counts(t *testing.T, s sink.Store) map[int]int {
	t.Helper()
	rows, err := s.Rows(context.Background())
	require.NoError(t, err)
	c := map[int]int{}
	for _, r := range rows {
		c[r.I]++
		assert.Equal(t, int64(10*r.I), r.Val)
	}
	return c
}

// once is the counts of records from..to each once.
func once(from, to int) map[int]int {
	c := map[int]int{}
	for i := from; i <= to; i++ {
		c[i] = 1
	}
	return c
}

// TestStoreTransactions: a transaction's records are invisible until it
// commits; a commit retried changes nothing; an abort drops them; Pending
// lists each state.
func TestStoreTransactions(t *testing.T) {
	ctx := context.Background()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			require.NoError(t, s.Begin(ctx, 1))
			require.NoError(t, s.Write(ctx, 1, recs(1, 3)))
			require.NoError(t, s.Write(ctx, 1, recs(4, 5)))
			require.NoError(t, s.PreCommit(ctx, 1))
			assert.Empty(t, counts(t, s), "pre-committed is not visible")
			require.NoError(t, s.Begin(ctx, 2))
			require.NoError(t, s.Write(ctx, 2, recs(6, 7)))
			tx, err := s.Pending(ctx)
			require.NoError(t, err)
			assert.Equal(t, []int{1}, tx.Prepared)
			assert.Contains(t, tx.Open, 2)
			require.NoError(t, s.Commit(ctx, 1))
			require.NoError(t, s.Commit(ctx, 1), "a retried commit")
			assert.Equal(t, once(1, 5), counts(t, s))
			require.NoError(t, s.Abort(ctx, 2))
			tx, err = s.Pending(ctx)
			require.NoError(t, err)
			assert.Equal(t, sink.Txns{Committed: []int{1}}, tx)
			assert.Equal(t, once(1, 5), counts(t, s))
		})
	}
}

// TestStoreAbortIsLoss: a pre-committed transaction the store aborted on
// its own is not taken for committed: Commit says ErrLost naming it, and
// Recover lists it lost (the spec's reported loss, never silent).
func TestStoreAbortIsLoss(t *testing.T) {
	ctx := context.Background()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			require.NoError(t, s.Begin(ctx, 1))
			require.NoError(t, s.Write(ctx, 1, recs(1, 3)))
			require.NoError(t, s.PreCommit(ctx, 1))
			s.storeAbort(t, 1)
			err := s.Commit(ctx, 1)
			require.ErrorIs(t, err, sink.ErrLost)
			assert.Contains(t, err.Error(), "snapshot 1")
			r, err := sink.Recover(ctx, s, []int{1})
			require.NoError(t, err)
			assert.Equal(t, []int{1}, r.Lost)
			assert.Empty(t, counts(t, s))
		})
	}
}

// TestOpenErrors: a database that cannot be opened, a table with another
// shape, a server without prepared transactions: each a clear error
// naming it, and nothing written.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, err := OpenSQLite(ctx, dir, Config{})
	require.ErrorIs(t, err, sink.ErrOpen)
	assert.Contains(t, err.Error(), dir+" is a directory")
	_, err = OpenSQLite(ctx, filepath.Join(dir, "no", "such", "x.db"), Config{})
	require.ErrorIs(t, err, sink.ErrOpen)
	garbage := filepath.Join(dir, "garbage.db")
	require.NoError(t, writeFile(garbage, "this is not a database, just text long enough to be read as a header......"))
	_, err = OpenSQLite(ctx, garbage, Config{})
	require.ErrorIs(t, err, sink.ErrOpen)
	assert.Contains(t, err.Error(), garbage)

	shaped := filepath.Join(dir, "shaped.db")
	s, err := OpenSQLite(ctx, shaped, Config{Table: "results"})
	require.NoError(t, err)
	_, err = s.DB().Exec("CREATE TABLE other (a INTEGER, b TEXT)")
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = OpenSQLite(ctx, shaped, Config{Table: "other"})
	require.ErrorIs(t, err, sink.ErrShape)
	assert.Contains(t, err.Error(), "other in "+shaped+" has columns (a integer, b text), want (job text, snap integer, src integer, i integer, val integer)")

	_, err = OpenSQLite(ctx, shaped, Config{Table: "Robert'); DROP TABLE x;--"})
	assert.ErrorContains(t, err, "want a lower-case SQL identifier")
}

// TestSQLitePathIsAPath: a path with the bytes a URI gives a meaning ('?',
// '#', '%', ':', a leading "//") or SQLite's own name ":memory:" opens a
// database file at that very path, with the DSN's pragmas in force
// (write-ahead logging, synchronous FULL).
func TestSQLitePathIsAPath(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"a#b", "q?x=1&_pragma=synchronous(OFF)", "p%41%", "a:b", ":memory:", "plain"} {
		dir := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.Mkdir(dir, 0o755))
		path := filepath.Join(dir, "out.db")
		if name == ":memory:" {
			path = dir // a file named :memory:, not SQLite's in-memory database
			require.NoError(t, os.Remove(dir))
		}
		s, err := OpenSQLite(ctx, path, Config{Job: "j"})
		require.NoError(t, err, name)
		var journal string
		var sync int
		require.NoError(t, s.DB().QueryRow("PRAGMA journal_mode").Scan(&journal), name)
		require.NoError(t, s.DB().QueryRow("PRAGMA synchronous").Scan(&sync), name)
		assert.Equal(t, "wal", journal, name)
		assert.Equal(t, 2, sync, name) // FULL
		require.NoError(t, s.Close())
		assert.FileExists(t, path, name)
	}
	// "//" is no URI authority: the path, relative to the working
	// directory too, is a file's.
	dir := t.TempDir()
	s, err := OpenSQLite(ctx, "/"+filepath.Join(dir, "slashes.db"), Config{Job: "j"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.FileExists(t, filepath.Join(dir, "slashes.db"))
	t.Chdir(dir)
	s, err = OpenSQLite(ctx, "rel.db", Config{Job: "j"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.FileExists(t, filepath.Join(dir, "rel.db"))
}

func TestOpenErrorsPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no PostgreSQL server (make test runs it)")
	}
	ctx := context.Background()
	url := pgtest.Shared(t)
	c, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = c.Exec(ctx, "CREATE TABLE other (a BIGINT, b TEXT)")
	require.NoError(t, err)
	c.Close(ctx)
	_, err = OpenPostgres(ctx, url, Config{Table: "other"})
	require.ErrorIs(t, err, sink.ErrShape)
	assert.Contains(t, err.Error(), "has columns (a integer, b text)")

	_, err = OpenPostgres(ctx, "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=5", Config{})
	require.ErrorIs(t, err, sink.ErrOpen)
	assert.Contains(t, err.Error(), "postgres@127.0.0.1:1/x")

	s0 := pgtest.Require(t, func() (*pgtest.Server, error) { return pgtest.Start(pgtest.Options{MaxPrepared: 0}) })
	defer s0.Stop()
	_, err = OpenPostgres(ctx, s0.URL("postgres"), Config{})
	require.ErrorIs(t, err, sink.ErrNoPrepared)
	assert.Contains(t, err.Error(), "max_prepared_transactions = 0")
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
