package main

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/dataflow/sink/pgtest"
)

// smallFlow is a quick flow run's flags (memory runtime), the sink killed
// after its third pre-commit.
var smallFlow = []string{"--par", "2", "--records", "150", "--slow", "20us", "--every", "2ms", "--fail-after", "60", "--runtime", "memory", "--kill-sink", "3"}

// flow --out writes the results into DIR/sink.db; queried back here (not
// through the sink), every job holds each record exactly once.
func TestFlowSinkSQLite(t *testing.T) {
	out := filepath.Join(t.TempDir(), "flow")
	var stdout, errb bytes.Buffer
	code := runFlow(append(smallFlow, "--out", out), &stdout, &errb)
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), errb.String())
	assert.Contains(t, stdout.String(), "300 rows, each once")
	db, err := sql.Open("sqlite", filepath.Join(out, "sink.db"))
	require.NoError(t, err)
	defer db.Close()
	for _, job := range []string{"flow_aligned", "flow_unaligned", "flow_chandy_lamport"} {
		var rows, distinct int
		require.NoError(t, db.QueryRow("SELECT COUNT(*), COUNT(DISTINCT src || '/' || i) FROM mw_output WHERE job = ?", job).Scan(&rows, &distinct))
		assert.Equal(t, 300, rows, job)
		assert.Equal(t, 300, distinct, job)
	}
}

// flow --sink-url into a real PostgreSQL: the same, with prepared
// transactions.
func TestFlowSinkPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a PostgreSQL server and three flow runs; TestFlowSinkSQLite covers the demo")
	}
	t.Parallel() // it waits on processes and timers (waitersParallel)
	url := pgtest.Shared(t)
	var stdout, errb bytes.Buffer
	code := runFlow(append(smallFlow, "--sink-url", url), &stdout, &errb)
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), errb.String())
	assert.Contains(t, stdout.String(), "300 rows, each once")
	assert.Contains(t, stdout.String(), "PostgreSQL")
}

// Bad databases are bad input: exit 2, the error naming the database
// and what is wrong, before any run; nothing is committed twice.
func TestFlowSinkBadInput(t *testing.T) {
	dir := t.TempDir()
	shaped := filepath.Join(dir, "shaped.db")
	db, err := sql.Open("sqlite", shaped)
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE mw_output (id INTEGER PRIMARY KEY, payload TEXT)")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	used := filepath.Join(dir, "used.db")
	var stdout, errb bytes.Buffer
	require.Equal(t, exitOK, runFlow(append(smallFlow, "--sink-url", used), &stdout, &errb), errb.String())
	before, err := os.ReadFile(used)
	require.NoError(t, err)
	for _, tc := range []struct{ url, want string }{
		{dir, "sink: the database cannot be opened: " + dir + " is a directory"},
		{filepath.Join(dir, "no", "x.db"), "sink: the database cannot be opened: " + filepath.Join(dir, "no", "x.db")},
		{shaped, "mw_output in " + shaped + " has columns (id integer, payload text), want (job text, snap integer, src integer, i integer, val integer)"},
		{used, "already holds output of job flow_aligned"},
	} {
		var stdout, errb bytes.Buffer
		assert.Equal(t, exitUsage, runFlow(append(smallFlow, "--sink-url", tc.url), &stdout, &errb), tc.url)
		assert.Contains(t, errb.String(), tc.want)
		assert.Empty(t, stdout.String())
	}
	after, err := os.ReadFile(used)
	require.NoError(t, err)
	assert.Equal(t, len(before), len(after), "the used database is as it was")
}

// A PostgreSQL without prepared transactions is bad input, named.
func TestFlowSinkNoPreparedTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a PostgreSQL server of its own; impl/dataflow/sink/sinkdb's TestOpenErrorsPostgres checks the same error")
	}
	s := pgtest.Require(t, func() (*pgtest.Server, error) { return pgtest.Start(pgtest.Options{MaxPrepared: 0}) })
	defer s.Stop()
	var stdout, errb bytes.Buffer
	assert.Equal(t, exitUsage, runFlow(append(smallFlow, "--sink-url", s.URL("postgres")), &stdout, &errb))
	assert.Contains(t, errb.String(), "max_prepared_transactions = 0")

}
