// Package sink is exactly once to the outside world: a two-phase-commit
// sink (Flink's TwoPhaseCommitSinkFunction) writing the dataflow's
// results into a real database, SQLite (modernc.org/sqlite, pure Go, the
// embedded default) or PostgreSQL (real prepared transactions through
// pgx), behind one interface, Store, so that another store can be added.
// The two stores are in impl/dataflow/sink/sinkdb: this package imports
// neither database's driver, so that the race-tested runtime
// (impl/dataflow/run) does not compile them with -race.
//
// Per snapshot k the sink holds a transaction: the records it took after
// its barrier of k-1 and before its barrier of k (Begin, Write). At its
// barrier of k, when it records its part of the snapshot, it pre-commits
// the transaction (PreCommit: durable, invisible); only when the
// coordinator says snapshot k is complete does it commit it (Commit:
// visible, exactly once). On restore from the latest complete snapshot,
// Recover commits the pre-committed transactions of complete snapshots
// not yet committed and aborts every other open or pre-committed one: the
// records they held are replayed by the restored graph. A transaction the
// store aborted on its own (a timeout, an administrator, a killed
// session before its PREPARE) is never taken for committed: Commit says
// ErrLost and Recover lists it in Recovery.Lost.
//
// Driver is the sink function: what a runtime calls from the sink node
// (Take, Barrier), from the coordinator (Complete) and on restore
// (Restore); impl/dataflow/run drives it in both runtimes. AtLeastOnce is
// the comparison: it writes straight into the output table, and replays
// after a restore show up twice.
//
// The spec is tla/BarrierSink.tla (helper sinkspec's, issue #19): its
// actions PreCommit, Commit, Abort and Restore are Driver.Barrier,
// Driver.Complete, the aborts of plan, and Driver.Restore.
package sink
