// Package sinkdb is the two-phase-commit sink's stores (package sink's
// Store): SQLite (modernc.org/sqlite, pure Go, the embedded default;
// prepared transactions encoded in tables) and PostgreSQL (real prepared
// transactions through pgx), and Open, which picks one by URL. Its tests
// check the stores and the sink's Driver on both databases, a real
// PostgreSQL started by pgtest.
//
// It is apart from package sink so that the runtimes, which import the
// Driver and are tested under the race detector, do not compile the
// databases' drivers with -race; make test runs this package's tests
// without it (the Makefile's RACE_NOT says why).
package sinkdb
