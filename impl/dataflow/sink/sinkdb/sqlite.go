package sinkdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, "sqlite"
)

// SQLite is a Store in an SQLite database file, the embedded default.
// SQLite has no prepared transactions; they are encoded in tables: a
// transaction's records are staged in <table>_staged keyed by job and
// snapshot (open), a row in <table>_prepared pre-commits it, and Commit is
// one SQLite transaction that moves the staged rows into the output,
// drops the prepared row and records the snapshot in <table>_committed,
// which makes committing twice a no-op. A store abort is the prepared row
// gone without the committed one.
type SQLite struct {
	db   *sql.DB
	path string
	cfg  Config
	q    sqliteSQL
}

// sqliteSQL is the statements, with the tables' names in.
type sqliteSQL struct {
	stage, prepare, moveRows, dropStaged, dropPrepared, commit, isCommitted, append, rows string
	pendingStaged, pendingPrepared, pendingCommitted                                      string
}

func newSQLiteSQL(t string) sqliteSQL {
	return sqliteSQL{
		stage:            "INSERT INTO " + t + "_staged (job, snap, src, i, val) VALUES (?, ?, ?, ?, ?)",
		prepare:          "INSERT INTO " + t + "_prepared (job, snap) VALUES (?, ?)",
		moveRows:         "INSERT INTO " + t + " (job, snap, src, i, val) SELECT job, snap, src, i, val FROM " + t + "_staged WHERE job = ? AND snap = ? ORDER BY rowid",
		dropStaged:       "DELETE FROM " + t + "_staged WHERE job = ? AND snap = ?",
		dropPrepared:     "DELETE FROM " + t + "_prepared WHERE job = ? AND snap = ?",
		commit:           "INSERT INTO " + t + "_committed (job, snap) VALUES (?, ?)",
		isCommitted:      "SELECT COUNT(*) FROM " + t + "_committed WHERE job = ? AND snap = ?",
		append:           "INSERT INTO " + t + " (job, snap, src, i, val) VALUES (?, 0, ?, ?, ?)",
		rows:             "SELECT src, i, val, snap FROM " + t + " WHERE job = ? ORDER BY src, i, snap",
		pendingStaged:    "SELECT DISTINCT snap FROM " + t + "_staged WHERE job = ? ORDER BY snap",
		pendingPrepared:  "SELECT snap FROM " + t + "_prepared WHERE job = ? ORDER BY snap",
		pendingCommitted: "SELECT snap FROM " + t + "_committed WHERE job = ? ORDER BY snap",
	}
}

// OpenSQLite opens (creating it if need be) the SQLite database at path
// and the sink's tables in it, checking the shape of those that exist.
func OpenSQLite(ctx context.Context, path string, cfg Config) (*SQLite, error) {
	cfg, err := cfg.check()
	if err != nil {
		return nil, err
	}
	if err := checkDBPath(path); err != nil {
		return nil, err
	}
	dsn, err := sqliteDSN(path, cfg.NoSync)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", sink.ErrOpen, path, err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", sink.ErrOpen, path, err)
	}
	db.SetMaxOpenConns(1) // one writer: SQLite's own rule, without busy waits
	s := &SQLite{db: db, path: path, cfg: cfg, q: newSQLiteSQL(cfg.Table)}
	if err := s.setUp(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// checkDBPath checks that path can name a database file: not a
// directory, in a folder that exists.
func checkDBPath(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%w: %s is a directory", sink.ErrOpen, path)
	}
	if _, err := os.Stat(filepath.Dir(path)); err != nil {
		return fmt.Errorf("%w: %s: %v", sink.ErrOpen, path, err)
	}
	return nil
}

// sqliteDSN is the data source name of the database at path: write-ahead
// logging, a 10 s busy timeout, and synchronous FULL (OFF if noSync).
// The path is made absolute and clean first, so that it is a file's path
// to SQLite whatever it spells: "//host/x" is no URI authority and
// ":memory:" no in-memory database (the sink's output would vanish).
// Then it is a URI's path (SQLite decodes %HH there), so the three bytes
// a URI gives a meaning are escaped: unescaped, a '?' in a folder's name
// would start the query early and drop the pragmas (synchronous FULL
// among them), and a '#' would cut the path short.
func sqliteDSN(path string, noSync bool) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	sync := "FULL"
	if noSync {
		sync = "OFF"
	}
	return "file:" + uriPath.Replace(abs) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(" + sync + ")", nil
}

// uriPath escapes what a file: URI's path may not hold as is.
var uriPath = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// setUp creates the tables that are missing and checks the shape of the
// output and committed tables.
func (s *SQLite) setUp(ctx context.Context) error {
	t := s.cfg.Table
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("%w: %s: %v", sink.ErrOpen, s.path, err)
	}
	for _, ddl := range []string{
		"CREATE TABLE IF NOT EXISTS " + t + " (job TEXT NOT NULL, snap INTEGER NOT NULL, src INTEGER NOT NULL, i INTEGER NOT NULL, val INTEGER NOT NULL)",
		"CREATE TABLE IF NOT EXISTS " + t + "_committed (job TEXT NOT NULL, snap INTEGER NOT NULL, PRIMARY KEY (job, snap))",
		"CREATE TABLE IF NOT EXISTS " + t + "_staged (job TEXT NOT NULL, snap INTEGER NOT NULL, src INTEGER NOT NULL, i INTEGER NOT NULL, val INTEGER NOT NULL)",
		"CREATE TABLE IF NOT EXISTS " + t + "_prepared (job TEXT NOT NULL, snap INTEGER NOT NULL, PRIMARY KEY (job, snap))",
	} {
		if _, err := s.db.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("%w: %s: %v", sink.ErrOpen, s.path, err)
		}
	}
	for tbl, want := range map[string][]column{t: outputShape, t + "_committed": committedShape, t + "_staged": outputShape, t + "_prepared": committedShape} {
		if err := s.checkTable(ctx, tbl, want); err != nil {
			return err
		}
	}
	return nil
}

// checkTable compares table's columns (PRAGMA table_info) with want.
func (s *SQLite) checkTable(ctx context.Context, table string, want []column) error {
	rows, err := s.db.QueryContext(ctx, "SELECT name, type FROM pragma_table_info(?) ORDER BY cid", table)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", sink.ErrOpen, s.path, err)
	}
	defer rows.Close()
	have, err := readColumns(rows)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", sink.ErrOpen, s.path, err)
	}
	return checkShape(s.path, table, have, want)
}

// Name is "sqlite <path>".
func (s *SQLite) Name() string { return "sqlite " + s.path }

// DB is the database, for tests and queries.
func (s *SQLite) DB() *sql.DB { return s.db }

// inTx runs f in one SQLite transaction, committed if f returns nil.
func (s *SQLite) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sink: %s: %w", s.Name(), err)
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sink: %s: %w", s.Name(), err)
	}
	return nil
}

// Begin opens snap's transaction: nothing to do until its first records
// are staged.
func (s *SQLite) Begin(context.Context, int) error { return nil }

// Write stages recs as snap's, in one SQLite transaction.
func (s *SQLite) Write(ctx context.Context, snap int, recs []sink.Record) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		return s.insert(ctx, tx, s.q.stage, snap, recs)
	})
}

// insert runs the insert statement q (stage or append) for each record.
func (s *SQLite) insert(ctx context.Context, tx *sql.Tx, q string, snap int, recs []sink.Record) error {
	st, err := tx.PrepareContext(ctx, q)
	if err != nil {
		return fmt.Errorf("sink: %s: %w", s.Name(), err)
	}
	defer st.Close()
	for _, r := range recs {
		args := []any{s.cfg.Job, snap, r.Src, r.I, r.Val}
		if q == s.q.append {
			args = []any{s.cfg.Job, r.Src, r.I, r.Val}
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("sink: %s: %w", s.Name(), err)
		}
	}
	return nil
}

// PreCommit records snap's transaction as pre-committed.
func (s *SQLite) PreCommit(ctx context.Context, snap int) error {
	return s.exec(ctx, s.q.prepare, snap)
}

func (s *SQLite) exec(ctx context.Context, q string, snap int) error {
	if _, err := s.db.ExecContext(ctx, q, s.cfg.Job, snap); err != nil {
		return fmt.Errorf("sink: %s, snapshot %d: %w", s.Name(), snap, err)
	}
	return nil
}

// Commit moves snap's staged records into the output and records it
// committed, in one transaction; a committed snap is left as it is, and
// one neither committed nor pre-committed is ErrLost.
func (s *SQLite) Commit(ctx context.Context, snap int) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q.dropPrepared, s.cfg.Job, snap)
		if err != nil {
			return fmt.Errorf("sink: %s: %w", s.Name(), err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return committed(s.Name(), snap, s.isCommitted(ctx, tx, snap))
		}
		for _, q := range []string{s.q.moveRows, s.q.dropStaged, s.q.commit} {
			if _, err := tx.ExecContext(ctx, q, s.cfg.Job, snap); err != nil {
				return fmt.Errorf("sink: %s, committing snapshot %d: %w", s.Name(), snap, err)
			}
		}
		return nil
	})
}

// isCommitted reports whether snap is in the committed table.
func (s *SQLite) isCommitted(ctx context.Context, tx *sql.Tx, snap int) bool {
	var n int
	err := tx.QueryRowContext(ctx, s.q.isCommitted, s.cfg.Job, snap).Scan(&n)
	return err == nil && n > 0
}

// Abort drops snap's staged records and its pre-commit.
func (s *SQLite) Abort(ctx context.Context, snap int) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{s.q.dropStaged, s.q.dropPrepared} {
			if _, err := tx.ExecContext(ctx, q, s.cfg.Job, snap); err != nil {
				return fmt.Errorf("sink: %s, aborting snapshot %d: %w", s.Name(), snap, err)
			}
		}
		return nil
	})
}

// Pending lists the job's open (staged), pre-committed and committed
// snapshots.
func (s *SQLite) Pending(ctx context.Context) (sink.Txns, error) {
	var t sink.Txns
	var err error
	for _, x := range []struct {
		q   string
		dst *[]int
	}{{s.q.pendingStaged, &t.Open}, {s.q.pendingPrepared, &t.Prepared}, {s.q.pendingCommitted, &t.Committed}} {
		if *x.dst, err = queryInts(ctx, s.db, x.q, s.cfg.Job); err != nil {
			return t, fmt.Errorf("sink: %s: %w", s.Name(), err)
		}
	}
	return t, nil
}

// queryInts is the one integer column of q's rows.
func queryInts(ctx context.Context, db *sql.DB, q string, args ...any) ([]int, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// Append writes recs straight into the output (snapshot 0).
func (s *SQLite) Append(ctx context.Context, recs []sink.Record) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		return s.insert(ctx, tx, s.q.append, 0, recs)
	})
}

// Rows queries back the job's output.
func (s *SQLite) Rows(ctx context.Context) ([]sink.Row, error) {
	rows, err := s.db.QueryContext(ctx, s.q.rows, s.cfg.Job)
	if err != nil {
		return nil, fmt.Errorf("sink: %s: %w", s.Name(), err)
	}
	defer rows.Close()
	return scanRows(rows)
}

// scanner is what *sql.Rows and pgx.Rows both have.
type scanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// scanRows reads src, i, val, snap rows.
func scanRows(rows scanner) ([]sink.Row, error) {
	var out []sink.Row
	for rows.Next() {
		var r sink.Row
		if err := rows.Scan(&r.Src, &r.I, &r.Val, &r.Snap); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Close closes the database.
func (s *SQLite) Close() error {
	if err := s.db.Close(); err != nil && !errors.Is(err, sql.ErrConnDone) {
		return err
	}
	return nil
}
