package sink

import (
	"context"
	"errors"
	"slices"
)

// Record is one result: the record's identity (its source and its number
// there, dataflow.Key) and its value.
type Record struct {
	Src, I int
	Val    int64
}

// Row is a committed result as the database holds it: the record and the
// snapshot whose transaction committed it (0: written at least once, no
// transaction).
type Row struct {
	Record
	Snap int
}

// Store is a transactional store a two-phase-commit sink writes to: per
// snapshot one transaction, named by the store's job and the snapshot's
// id. Its methods are called from one goroutine at a time (Driver locks).
type Store interface {
	// Begin opens snapshot snap's transaction.
	Begin(ctx context.Context, snap int) error
	// Write adds records to snap's open transaction.
	Write(ctx context.Context, snap int, recs []Record) error
	// PreCommit makes snap's transaction durable but invisible: after a
	// crash it is still there to be committed or aborted.
	PreCommit(ctx context.Context, snap int) error
	// Commit makes snap's pre-committed transaction visible; committing
	// a committed one does nothing; one the store aborted is ErrLost.
	Commit(ctx context.Context, snap int) error
	// Abort drops snap's open or pre-committed transaction.
	Abort(ctx context.Context, snap int) error
	// Pending lists the store's transactions of this job that are neither
	// committed nor aborted, open or pre-committed, and the committed ones.
	Pending(ctx context.Context) (Txns, error)
	// Append writes records straight into the output, outside any
	// transaction (the at-least-once sink).
	Append(ctx context.Context, recs []Record) error
	// Rows queries back the job's committed output.
	Rows(ctx context.Context) ([]Row, error)
	// Close releases the store's connections; an open transaction is
	// lost (the store aborts it), pre-committed ones stay.
	Close() error
	// Name says which store and database it is, for messages.
	Name() string
}

// Txns is what a store holds of a job's transactions.
type Txns struct {
	Open, Prepared, Committed []int
}

// Recovery is what Recover did: the snapshots whose transactions it
// committed and aborted, and the complete snapshots whose transaction is
// neither committed nor pre-committed: the store aborted it, its records
// are lost (reported, never silent).
type Recovery struct {
	Committed, Aborted, Lost []int
}

// The errors a store wraps.
var (
	// ErrOpen: the database cannot be opened or reached.
	ErrOpen = errors.New("sink: the database cannot be opened")
	// ErrShape: a table the sink needs exists with another shape.
	ErrShape = errors.New("sink: a table exists with another shape")
	// ErrNoPrepared: PostgreSQL's max_prepared_transactions is 0.
	ErrNoPrepared = errors.New("sink: the server does not allow prepared transactions")
	// ErrLost: the store aborted a transaction the sink pre-committed
	// before the sink committed it; its records are not in the output.
	ErrLost = errors.New("sink: the store aborted the transaction: its records are lost")
	// ErrState: a call out of the protocol's order.
	ErrState = errors.New("sink: out of order")
)

// plan mirrors the spec's Restore for the sink (tla/BarrierSink.tla):
// of the store's pending transactions, commit the pre-committed ones of
// complete snapshots, abort every other open or pre-committed one; a
// complete snapshot with neither a committed nor a pre-committed
// transaction is lost.
func plan(t Txns, complete []int) Recovery {
	var r Recovery
	var abortPrepared, abortOpen []int
	r.Committed, abortPrepared = split(t.Prepared, complete)
	_, abortOpen = split(t.Open, t.Prepared)
	r.Aborted = append(abortPrepared, abortOpen...)
	_, r.Lost = split(complete, t.Committed, t.Prepared)
	slices.Sort(r.Committed)
	slices.Sort(r.Aborted)
	return r
}

// split is the snapshots of xs that are in one of sets, and the others,
// each in the order of xs (nil when none).
func split(xs []int, sets ...[]int) (in, out []int) {
	for _, s := range xs {
		if slices.ContainsFunc(sets, func(set []int) bool { return slices.Contains(set, s) }) {
			in = append(in, s)
		} else {
			out = append(out, s)
		}
	}
	return in, out
}

// Recover carries out plan on st: it commits and aborts what plan says,
// in the order of the snapshots, and reports the lost ones.
func Recover(ctx context.Context, st Store, complete []int) (Recovery, error) {
	t, err := st.Pending(ctx)
	if err != nil {
		return Recovery{}, err
	}
	r := plan(t, complete)
	for _, s := range r.Committed {
		if err := st.Commit(ctx, s); err != nil {
			return r, err
		}
	}
	for _, s := range r.Aborted {
		if err := st.Abort(ctx, s); err != nil {
			return r, err
		}
	}
	return r, nil
}
