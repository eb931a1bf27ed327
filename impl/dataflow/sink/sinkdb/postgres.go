package sinkdb

import (
	"context"
	"errors"
	"fmt"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Postgres is a Store in a PostgreSQL database with real prepared
// transactions: snapshot k's transaction is opened on the writer's
// session (BEGIN), takes its records (COPY into the output table) and a
// row in <table>_committed, and is pre-committed with PREPARE TRANSACTION
// 'mw-<job>-<k>'; any session then commits it (COMMIT PREPARED) or aborts
// it (ROLLBACK PREPARED), and the committed row makes a retried commit
// recognisable. The server needs max_prepared_transactions > 0.
//
// Begin, Write and PreCommit use the writer's connection, Commit the
// control connection: one goroutine may write while another commits.
// The others are called while neither runs.
type Postgres struct {
	w, ctl *pgx.Conn
	url    string // without the password, for messages
	cfg    Config
	open   int // the snapshot whose transaction the writer has open (0: none)
}

// OpenPostgres connects to the PostgreSQL server at url (twice: the
// writer and the control connection), checks that it allows prepared
// transactions, and creates or checks the sink's tables.
func OpenPostgres(ctx context.Context, url string, cfg Config) (*Postgres, error) {
	cfg, err := cfg.check()
	if err != nil {
		return nil, err
	}
	p := &Postgres{url: redact(url), cfg: cfg}
	if p.ctl, err = pgx.Connect(ctx, url); err != nil {
		return nil, fmt.Errorf("%w: postgres %s: %v", sink.ErrOpen, p.url, err)
	}
	if p.w, err = pgx.Connect(ctx, url); err != nil {
		p.ctl.Close(ctx)
		return nil, fmt.Errorf("%w: postgres %s: %v", sink.ErrOpen, p.url, err)
	}
	for _, c := range []*pgx.Conn{p.w, p.ctl} {
		// A lock the sink waits for is one a stale prepared transaction
		// of its job holds (a recovery that did not run): an error
		// naming the statement, not a wait without end.
		if _, err := c.Exec(ctx, "SET lock_timeout = '10s'"); err != nil {
			p.Close()
			return nil, fmt.Errorf("%w: postgres %s: %v", sink.ErrOpen, p.url, err)
		}
	}
	if err := p.setUp(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// redact drops the password from a URL for messages.
func redact(url string) string {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return "(unparsable URL)"
	}
	return fmt.Sprintf("%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

// setUp checks max_prepared_transactions and the tables.
func (p *Postgres) setUp(ctx context.Context) error {
	var max string
	if err := p.ctl.QueryRow(ctx, "SHOW max_prepared_transactions").Scan(&max); err != nil {
		return fmt.Errorf("%w: postgres %s: %v", sink.ErrOpen, p.url, err)
	}
	if max == "0" {
		return fmt.Errorf("%w: postgres %s has max_prepared_transactions = 0 (set it above 0, e.g. 10, and restart the server)", sink.ErrNoPrepared, p.url)
	}
	t := p.cfg.Table
	for _, ddl := range []string{
		"CREATE TABLE IF NOT EXISTS " + t + " (job TEXT NOT NULL, snap BIGINT NOT NULL, src BIGINT NOT NULL, i BIGINT NOT NULL, val BIGINT NOT NULL)",
		"CREATE TABLE IF NOT EXISTS " + t + "_committed (job TEXT NOT NULL, snap BIGINT NOT NULL, PRIMARY KEY (job, snap))",
	} {
		if _, err := p.ctl.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("%w: postgres %s: %v", sink.ErrOpen, p.url, err)
		}
	}
	for tbl, want := range map[string][]column{t: outputShape, t + "_committed": committedShape} {
		if err := p.checkTable(ctx, tbl, want); err != nil {
			return err
		}
	}
	return nil
}

// checkTable compares table's columns (information_schema) with want.
func (p *Postgres) checkTable(ctx context.Context, table string, want []column) error {
	rows, err := p.ctl.Query(ctx, "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position", table)
	if err != nil {
		return fmt.Errorf("%w: postgres %s: %v", sink.ErrOpen, p.url, err)
	}
	defer rows.Close()
	have, err := readColumns(rows)
	if err != nil {
		return fmt.Errorf("%w: postgres %s: %v", sink.ErrOpen, p.url, err)
	}
	return checkShape("postgres "+p.url, table, have, want)
}

// Name is "postgres <user@host:port/db>".
func (p *Postgres) Name() string { return "postgres " + p.url }

// GID is snapshot snap's transaction name: 'mw-<job>-<snap>'.
func (p *Postgres) GID(snap int) string { return fmt.Sprintf("mw-%s-%d", p.cfg.Job, snap) }

func (p *Postgres) fail(snap int, what string, err error) error {
	return fmt.Errorf("sink: %s, %s %s: %w", p.Name(), what, p.GID(snap), err)
}

// Begin opens snap's transaction on the writer's session.
func (p *Postgres) Begin(ctx context.Context, snap int) error {
	if p.open != 0 {
		return fmt.Errorf("%w: %s: Begin(%d) with snapshot %d's transaction open", sink.ErrState, p.Name(), snap, p.open)
	}
	if _, err := p.w.Exec(ctx, "BEGIN"); err != nil {
		return p.fail(snap, "beginning", err)
	}
	p.open = snap
	return nil
}

// Write copies recs into the output table inside snap's transaction.
func (p *Postgres) Write(ctx context.Context, snap int, recs []sink.Record) error {
	if p.open != snap {
		return fmt.Errorf("%w: %s: Write(%d) with snapshot %d's transaction open", sink.ErrState, p.Name(), snap, p.open)
	}
	src := pgx.CopyFromSlice(len(recs), func(i int) ([]any, error) {
		r := recs[i]
		return []any{p.cfg.Job, int64(snap), int64(r.Src), int64(r.I), r.Val}, nil
	})
	if _, err := p.w.CopyFrom(ctx, pgx.Identifier{p.cfg.Table}, []string{"job", "snap", "src", "i", "val"}, src); err != nil {
		return p.fail(snap, "writing to", err)
	}
	return nil
}

// PreCommit records snap as committed inside its transaction and
// prepares it (PREPARE TRANSACTION).
func (p *Postgres) PreCommit(ctx context.Context, snap int) error {
	if p.open != snap {
		return fmt.Errorf("%w: %s: PreCommit(%d) with snapshot %d's transaction open", sink.ErrState, p.Name(), snap, p.open)
	}
	p.open = 0
	if _, err := p.w.Exec(ctx, "INSERT INTO "+p.cfg.Table+"_committed (job, snap) VALUES ($1, $2)", p.cfg.Job, snap); err != nil {
		_, _ = p.w.Exec(ctx, "ROLLBACK")
		return p.fail(snap, "pre-committing", err)
	}
	if _, err := p.w.Exec(ctx, "PREPARE TRANSACTION '"+p.GID(snap)+"'"); err != nil {
		return p.fail(snap, "preparing", err)
	}
	return nil
}

// Commit commits snap's prepared transaction (COMMIT PREPARED); if the
// server has no such prepared transaction, it is committed if its row
// in the committed table is there, else the server aborted it (ErrLost).
func (p *Postgres) Commit(ctx context.Context, snap int) error {
	_, err := p.ctl.Exec(ctx, "COMMIT PREPARED '"+p.GID(snap)+"'")
	if err == nil {
		return nil
	}
	if !undefinedObject(err) {
		return p.fail(snap, "committing", err)
	}
	var n int
	if err := p.ctl.QueryRow(ctx, "SELECT COUNT(*) FROM "+p.cfg.Table+"_committed WHERE job = $1 AND snap = $2", p.cfg.Job, snap).Scan(&n); err != nil {
		return p.fail(snap, "committing", err)
	}
	return committed(p.Name(), snap, n > 0)
}

// undefinedObject reports PostgreSQL's 42704: no prepared transaction
// of that name.
func undefinedObject(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42704"
}

// Abort rolls snap's transaction back: the writer's, if it is open, or
// the prepared one (ROLLBACK PREPARED), if the server has it.
func (p *Postgres) Abort(ctx context.Context, snap int) error {
	if p.open == snap {
		p.open = 0
		if _, err := p.w.Exec(ctx, "ROLLBACK"); err != nil {
			return p.fail(snap, "rolling back", err)
		}
		return nil
	}
	if _, err := p.ctl.Exec(ctx, "ROLLBACK PREPARED '"+p.GID(snap)+"'"); err != nil && !undefinedObject(err) {
		return p.fail(snap, "rolling back", err)
	}
	return nil
}

// Pending lists the writer's open transaction, the job's prepared ones
// (pg_prepared_xacts) and its committed snapshots.
func (p *Postgres) Pending(ctx context.Context) (sink.Txns, error) {
	var t sink.Txns
	if p.open != 0 {
		t.Open = []int{p.open}
	}
	prefix := "mw-" + p.cfg.Job + "-"
	gids, err := p.strings(ctx, "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1) ORDER BY prepared", prefix)
	if err != nil {
		return t, p.fail(0, "listing", err)
	}
	t.Prepared = snapsOf(gids, prefix)
	snaps, err := p.strings(ctx, "SELECT snap::text FROM "+p.cfg.Table+"_committed WHERE job = $1 ORDER BY snap", p.cfg.Job)
	if err != nil {
		return t, p.fail(0, "listing", err)
	}
	t.Committed = snapsOf(snaps, "")
	return t, nil
}

// snapsOf is the snapshot numbers in ss, each after prefix (a prepared
// transaction's gid "mw-JOB-N", or a committed snap as text); one that is
// not a number is none of the job's and is skipped.
func snapsOf(ss []string, prefix string) []int {
	var out []int
	for _, s := range ss {
		if n, err := strconv.Atoi(strings.TrimPrefix(s, prefix)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func (p *Postgres) strings(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := p.ctl.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Append copies recs straight into the output (snapshot 0), committed
// at once.
func (p *Postgres) Append(ctx context.Context, recs []sink.Record) error {
	src := pgx.CopyFromSlice(len(recs), func(i int) ([]any, error) {
		r := recs[i]
		return []any{p.cfg.Job, int64(0), int64(r.Src), int64(r.I), r.Val}, nil
	})
	if _, err := p.w.CopyFrom(ctx, pgx.Identifier{p.cfg.Table}, []string{"job", "snap", "src", "i", "val"}, src); err != nil {
		return fmt.Errorf("sink: %s, appending: %w", p.Name(), err)
	}
	return nil
}

// Rows queries back the job's output.
func (p *Postgres) Rows(ctx context.Context) ([]sink.Row, error) {
	rows, err := p.ctl.Query(ctx, "SELECT src, i, val, snap FROM "+p.cfg.Table+" WHERE job = $1 ORDER BY src, i, snap", p.cfg.Job)
	if err != nil {
		return nil, fmt.Errorf("sink: %s: %w", p.Name(), err)
	}
	defer rows.Close()
	return scanRows(rows)
}

// WriterPID is the server process of the writer's session (for tests
// that terminate it: pg_terminate_backend).
func (p *Postgres) WriterPID() uint32 { return p.w.PgConn().PID() }

// Close closes both connections: the server aborts an open transaction,
// prepared ones stay.
func (p *Postgres) Close() error {
	ctx := context.Background()
	var errs []error
	for _, c := range []*pgx.Conn{p.w, p.ctl} {
		if c != nil {
			errs = append(errs, c.Close(ctx))
		}
	}
	return errors.Join(errs...)
}
