package mutation

import (
	"regexp"

	"github.com/markerwave/markerwave/spec"
)

func init() { mutants = append(mutants, sinkMutants...) }

// sinkMutants break the two-phase-commit sink's rules (impl/dataflow/sink,
// tla/BarrierSink.tla's negative models), each caught by the sink's own
// tests on SQLite and a real PostgreSQL, naming the property, and by
// the lockstep against model/barrier's mirror of the spec. Each is told
// apart from the original by an execution:
//
//   - sink-commit-at-arrival: a barrier at the sink, then a crash before
//     the snapshot completes; the original's store holds nothing of it
//     and the replay puts the records in once, the mutant's holds them
//     at the barrier and again after the replay.
//   - sink-no-abort-on-restore: records written into an open transaction
//     and a pre-committed one of an incomplete snapshot, then a crash;
//     the original's recovery aborts both and the store holds neither,
//     the mutant's leaves them (SQLite's staged rows and pre-commit,
//     PostgreSQL's prepared transaction) for the replay to write again.
//   - sink-forget-complete: a crash between completion and commit; the
//     original's recovery commits the pre-committed transaction, the
//     mutant's aborts it and its records are missing.
//   - sink-store-abort-silent: the store aborts a pre-committed
//     transaction and its snapshot completes; the original reports the
//     loss, the mutant takes it for committed.
var sinkMutants = []mutant{
	{
		Name: "sink-commit-at-arrival",
		Rule: "the sink commits a transaction only once its snapshot is complete (the coordinator's notification), never at its barrier",
		Doc:  "Driver.Barrier commits the transaction right after pre-committing it",
		Patches: []patch{{
			File: "impl/dataflow/sink/driver.go",
			Old:  "\td.pre = snap\n\td.prepare(snap)\n",
			New:  "\td.pre = snap\n\td.prepare(snap)\n\t_ = d.st.Commit(d.ctx, snap) // MUTANT sink-commit-at-arrival: committed at the barrier\n",
		}},
		Runs: []goTest{sinkRun("TestDriverCommitsOnlyComplete"), sinkLockstepRun},
		Want: spec.PropCommittedOnlyComplete,
		Expect: []expect{
			outputHas("TestDriverCommitsOnlyComplete", "the store holds an incomplete snapshot's records",
				regexp.MustCompile(`CommittedOnlyComplete is violated: snapshot 1 is not complete and the store holds its records`)),
			sinkLockstepFails,
		},
	},
	{
		Name: "sink-no-abort-on-restore",
		Rule: "a restore aborts every open transaction and every pre-committed one of an incomplete snapshot",
		Doc:  "Recover aborts nothing",
		Patches: []patch{{
			File: "impl/dataflow/sink/sink.go",
			Old:  "\tfor _, s := range r.Aborted {\n",
			New:  "\tfor _, s := range r.Aborted[:0] { // MUTANT sink-no-abort-on-restore: nothing aborted\n",
		}},
		Runs: []goTest{sinkRun("TestDriverRestoreAbortsOpen"), sinkLockstepRun},
		Want: spec.PropExactlyOnceOutput,
		Expect: []expect{
			outputHas("TestDriverRestoreAbortsOpen", "transactions left open and pre-committed after the restore, to be written again",
				regexp.MustCompile(`ExactlyOnceOutput is violated: after the restore the store still holds the transactions of snapshots \[\d*\] \(open\) and \[2\] \(pre-committed\)`)),
			sinkLockstepFails,
		},
	},
	{
		Name: "sink-forget-complete",
		Rule: "a restore commits the pre-committed transactions of complete snapshots not yet committed",
		Doc:  "plan aborts a complete snapshot's pre-committed transaction as if it were incomplete",
		Patches: []patch{{
			File: "impl/dataflow/sink/sink.go",
			Old:  "\tr.Committed, abortPrepared = split(t.Prepared, complete)\n",
			New:  "\tr.Committed, abortPrepared = nil, t.Prepared // MUTANT sink-forget-complete: never committed on restore\n",
		}},
		Runs: []goTest{sinkRun("TestDriverRestoreCommitsComplete"), sinkLockstepRun},
		Want: spec.PropCompleteCommitted,
		Expect: []expect{
			outputHas("TestDriverRestoreCommitsComplete", "a complete snapshot's records missing after the restore",
				regexp.MustCompile(`CompleteCommitted is violated: snapshot 1 is complete and its record \d+ is in the store 0 times`)),
			sinkLockstepFails,
		},
	},
	{
		Name: "sink-store-abort-silent",
		Rule: "a transaction the store aborted on its own is never taken for committed: its loss is reported",
		Doc:  "committed takes a transaction the store no longer holds for committed",
		Patches: []patch{{
			File: "impl/dataflow/sink/sinkdb/schema.go",
			Old:  "\tif isCommitted {\n",
			New:  "\tif true || isCommitted { // MUTANT sink-store-abort-silent: a store abort is a commit\n",
		}},
		Runs: []goTest{sinkRun("TestDriverReportsStoreAbort"), sinkLockstepRun},
		Want: spec.PropCompleteCommitted,
		Expect: []expect{
			outputHas("TestDriverReportsStoreAbort", "a store-aborted transaction taken for committed",
				regexp.MustCompile(`CompleteCommitted is violated: the store aborted snapshot 1's transaction and the sink reports losses \[\], not \[1\]`)),
			sinkLockstepFails,
		},
	},
}

// sinkRun is a test of the Driver in impl/dataflow/sink/sinkdb, on
// SQLite and a real PostgreSQL.
func sinkRun(test string) goTest {
	return goTest{Pkg: "./impl/dataflow/sink/sinkdb", Tests: []string{test}}
}

// sinkLockstepRun is the sink's lockstep against model/barrier.
var sinkLockstepRun = goTest{Pkg: "./conformance", Tests: []string{"TestSinkLockstep"},
	Args: []string{"-rapid.checks=100", "-rapid.shrinktime=300ms"}}

// sinkLockstepFails: TestSinkLockstep fails, the store and the model
// parting ways.
var sinkLockstepFails = outputHas("TestSinkLockstep", "the store and model/barrier's tla/BarrierSink.tla part ways",
	regexp.MustCompile(`--- FAIL: TestSinkLockstep `))
