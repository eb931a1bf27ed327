package sinkdb

import (
	"fmt"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
	"regexp"
	"slices"
	"strings"
)

// Config names what a store writes: the job (its transactions are named
// after it, so that several jobs share a database) and the output table.
type Config struct {
	Job   string // [a-z0-9_]+, at most 32 characters; "" is "flow"
	Table string // an SQL identifier; "" is "mw_output"
	// NoSync (SQLite): commit without waiting for the disk
	// (synchronous=OFF): a crash of the machine, not only of the process,
	// may lose committed transactions. For tests; the default is FULL.
	NoSync bool
}

var ident = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,40}$`)

// check fills in the defaults and checks the names, which go into SQL
// text (identifiers, transaction names) and so must be plain.
func (c Config) check() (Config, error) {
	if c.Job == "" {
		c.Job = "flow"
	}
	if c.Table == "" {
		c.Table = "mw_output"
	}
	if !regexp.MustCompile(`^[a-z0-9_]{1,32}$`).MatchString(c.Job) {
		return c, fmt.Errorf("sink: job %q: want 1 to 32 of a-z, 0-9 and _", c.Job)
	}
	if !ident.MatchString(c.Table) {
		return c, fmt.Errorf("sink: table %q: want a lower-case SQL identifier", c.Table)
	}
	return c, nil
}

// column is a column of a table the sink needs: its name and its type's
// class (text or integer).
type column struct{ name, class string }

// outputShape is the output table's: the job, the snapshot that committed
// the row, and the record.
var outputShape = []column{{"job", "text"}, {"snap", "integer"}, {"src", "integer"}, {"i", "integer"}, {"val", "integer"}}

// committedShape is the table of committed snapshots: a row per job and
// snapshot whose transaction committed (the commit's idempotence).
var committedShape = []column{{"job", "text"}, {"snap", "integer"}}

// classOf is the class of an SQL type name as SQLite or PostgreSQL
// spell it: "integer" for the integer types, "text" for the character
// types, else the name itself.
func classOf(typ string) string {
	t := strings.ToLower(typ)
	switch {
	case strings.Contains(t, "int"):
		return "integer"
	case strings.Contains(t, "char"), strings.Contains(t, "text"):
		return "text"
	}
	return t
}

// columnRows are the rows of a query of a table's columns, each a name
// and a type: pgx's and database/sql's rows both are.
type columnRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// readColumns reads a table's columns from rows, each type by its class
// (classOf).
func readColumns(rows columnRows) ([]column, error) {
	var have []column
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, err
		}
		have = append(have, column{name, classOf(typ)})
	}
	return have, rows.Err()
}

// checkShape compares the columns a table has with those it needs.
func checkShape(db, table string, have, want []column) error {
	if slices.Equal(have, want) {
		return nil
	}
	return fmt.Errorf("%w: %s in %s has columns (%s), want (%s)", sink.ErrShape, table, db, render(have), render(want))
}

func render(cols []column) string {
	s := make([]string, len(cols))
	for i, c := range cols {
		s[i] = c.name + " " + c.class
	}
	return strings.Join(s, ", ")
}

// committed is the outcome of committing a transaction the store no
// longer holds pre-committed: nil if it is committed (a commit retried),
// sink.ErrLost if the store aborted it.
func committed(name string, snap int, isCommitted bool) error {
	if isCommitted {
		return nil
	}
	return fmt.Errorf("%w: %s, snapshot %d", sink.ErrLost, name, snap)
}
