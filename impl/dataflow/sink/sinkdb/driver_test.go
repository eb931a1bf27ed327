package sinkdb

import (
	"context"
	"fmt"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The Driver's rules, each on both stores, each failure naming the
// property of tla/BarrierSink.tla it breaks. A crash is the sink's
// process ending: its committer halted, its store closed; the restart
// opens the store again and Starts with the complete snapshots.

// sinkRun is a Driver over a store that can crash and restart.
type sinkRun struct {
	t     *testing.T
	s     store
	d     *sink.Driver
	trace *sink.Trace // nil: not traced
}

func newSinkRun(t *testing.T, open func(t *testing.T) store) *sinkRun {
	return newTracedRun(t, open, nil)
}

// newTracedRun is newSinkRun with its drivers writing trace tr.
func newTracedRun(t *testing.T, open func(t *testing.T) store, tr *sink.Trace) *sinkRun {
	r := &sinkRun{t: t, trace: tr}
	r.s = open(t)
	r.d = sink.NewDriver(context.Background(), r.s, sink.ExactlyOnce, 2)
	r.d.SetTrace(tr)
	_, err := r.d.Start(nil)
	require.NoError(t, err)
	return r
}

// take hands records from..to to the sink.
func (r *sinkRun) take(from, to int) {
	for _, rec := range recs(from, to) {
		require.NoError(r.t, r.d.Take(rec, time.Now()))
	}
}

// crash ends the sink's process and starts a new one recovering with
// complete; it returns the recovery.
func (r *sinkRun) crash(complete ...int) sink.Recovery {
	r.d.Halt()
	require.NoError(r.t, r.s.Close())
	r.s = r.s.reopen(r.t)
	r.d = sink.NewDriver(context.Background(), r.s, sink.ExactlyOnce, 2)
	r.d.SetTrace(r.trace)
	rec, err := r.d.Start(complete)
	require.NoError(r.t, err)
	return rec
}

// completeAndSettle is the coordinator's notification, the commit waited for.
func (r *sinkRun) completeAndSettle(snap int) {
	r.d.Complete(snap)
	require.NoError(r.t, r.d.Settle())
}

// exactlyOnce checks the store holds records 1..n once each, naming
// ExactlyOnceOutput.
func (r *sinkRun) exactlyOnce(n int) {
	r.t.Helper()
	got := counts(r.t, r.s)
	for i := 1; i <= n; i++ {
		if got[i] != 1 {
			r.t.Errorf("ExactlyOnceOutput is violated: record %d is in the store %d times, not once (%v)", i, got[i], got)
		}
	}
}

// TestDriverCommitsOnlyComplete: the sink pre-commits at its barrier and
// commits only once the snapshot is complete; a crash before then aborts
// the transaction, whose records are replayed: once.
func TestDriverCommitsOnlyComplete(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			r := newSinkRun(t, open)
			r.take(1, 5)
			require.NoError(t, r.d.Barrier(1))
			if got := counts(t, r.s); len(got) > 0 {
				t.Errorf("CommittedOnlyComplete is violated: snapshot 1 is not complete and the store holds its records %v", got)
			}
			rec := r.crash()
			require.Equal(t, []int{1}, rec.Aborted)
			r.take(1, 5)
			require.NoError(t, r.d.Barrier(1))
			r.completeAndSettle(1)
			r.exactlyOnce(5)
		})
	}
}

// TestDriverRestoreAbortsOpen: a restore aborts the open transaction (its
// records written, not pre-committed) and a pre-committed one of an
// incomplete snapshot; replayed, they are there once.
func TestDriverRestoreAbortsOpen(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			r := newSinkRun(t, open)
			r.take(1, 4)
			require.NoError(t, r.d.Barrier(1))
			r.completeAndSettle(1)
			r.take(5, 8)
			require.NoError(t, r.d.Barrier(2)) // snapshot 2 never completes
			r.take(9, 12)                      // snapshot 3's, open
			rec := r.crash(1)
			require.Empty(t, rec.Committed)
			left, err := r.s.Pending(context.Background())
			require.NoError(t, err)
			left.Open = slices.DeleteFunc(left.Open, func(s int) bool { return s == r.d.Open() }) // the new one, empty
			if len(left.Open)+len(left.Prepared) > 0 {
				t.Fatalf("ExactlyOnceOutput is violated: after the restore the store still holds the transactions of snapshots %v (open) and %v (pre-committed), whose records the replay writes again", left.Open, left.Prepared)
			}
			r.take(5, 12)
			require.NoError(t, r.d.Finish())
			r.exactlyOnce(12)
		})
	}
}

// TestDriverRestoreCommitsComplete: the sink crashes after the snapshot
// completed and before it committed; the restore commits the
// pre-committed transaction (its records are not replayed).
func TestDriverRestoreCommitsComplete(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			r := newSinkRun(t, open)
			r.take(1, 5)
			require.NoError(t, r.d.Barrier(1))
			rec := r.crash(1) // complete, the notification lost with the process
			got := counts(t, r.s)
			for i := 1; i <= 5; i++ {
				if got[i] != 1 {
					t.Errorf("CompleteCommitted is violated: snapshot 1 is complete and its record %d is in the store %d times after the restore (recovery: %+v)", i, got[i], rec)
				}
			}
			r.take(6, 7)
			require.NoError(t, r.d.Finish())
			r.exactlyOnce(7)
		})
	}
}

// TestDriverReportsStoreAbort: the store aborts a pre-committed
// transaction on its own; when its snapshot completes the sink reports
// the loss, never takes it for committed.
func TestDriverReportsStoreAbort(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			r := newSinkRun(t, open)
			r.take(1, 3)
			require.NoError(t, r.d.Barrier(1))
			r.s.storeAbort(t, 1)
			r.completeAndSettle(1)
			if lost := r.d.Lost(); fmt.Sprint(lost) != "[1]" {
				t.Errorf("CompleteCommitted is violated: the store aborted snapshot 1's transaction and the sink reports losses %v, not [1]: taken for committed", lost)
			}
			require.Empty(t, counts(t, r.s))
		})
	}
}

// gatedCommits is a real store whose commits wait for gate: a database
// committing slower than the snapshots come.
type gatedCommits struct {
	sink.Store
	gate chan struct{}
}

func (g gatedCommits) Commit(ctx context.Context, snap int) error {
	<-g.gate
	return g.Store.Commit(ctx, snap)
}

// TestDriverBoundsCommitBacklog: while commits lag, the sink pre-commits
// at most sink.MaxCommittable transactions of complete snapshots ahead
// of the committer (PostgreSQL's max_prepared_transactions is finite):
// the next barrier waits, and goes on once the committer catches up;
// every record is then there once.
func TestDriverBoundsCommitBacklog(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			r := &sinkRun{t: t, s: open(t)}
			g := gatedCommits{Store: r.s.Store, gate: make(chan struct{})}
			r.d = sink.NewDriver(context.Background(), g, sink.ExactlyOnce, 2)
			_, err := r.d.Start(nil)
			require.NoError(t, err)
			n := sink.MaxCommittable
			for k := 1; k <= n; k++ {
				r.take(2*k-1, 2*k)
				require.NoError(t, r.d.Barrier(k))
				r.d.Complete(k)
			}
			r.take(2*n+1, 2*n+2)
			done := make(chan error, 1)
			go func() { done <- r.d.Barrier(n + 1) }()
			require.Never(t, func() bool { return len(done) > 0 }, 50*time.Millisecond, time.Millisecond,
				"snapshot %d pre-committed with %d complete ones not committed", n+1, n)
			p, err := r.s.Pending(context.Background())
			require.NoError(t, err)
			require.Len(t, p.Prepared, n, "the store holds the pre-committed ones the committer has not reached")
			close(g.gate)
			require.NoError(t, <-done)
			r.completeAndSettle(n + 1)
			r.exactlyOnce(2*n + 2)
		})
	}
}
