package spec

// The vocabulary of tla/BarrierSink.tla: a two-phase-commit sink writing
// a dataflow's output into an external store (Flink's
// TwoPhaseCommitSinkFunction). Per checkpoint the sink holds one
// transaction with the records it took since its previous barrier; it
// pre-commits that transaction when its barrier's snapshot is taken,
// commits it only once the checkpoint is complete (the coordinator's
// notification), and on a restore commits the pre-committed transactions
// of complete checkpoints and aborts every other one. The store may abort
// a pre-committed transaction on its own (a timeout): if its checkpoint
// is complete, its output is lost, and the sink must report the loss.
//
// impl/dataflow/sink's Driver writes these steps as a sink trace
// (sink_trace.go); conformance audits them against the model.

// The sink's steps, as sink trace actions (SinkEvent.Action) and named
// as the actions of tla/BarrierSink.tla.
const (
	// SinkPreCommit: the sink's barrier arrived and it recorded; its open
	// transaction is pre-committed for that checkpoint (PREPARE
	// TRANSACTION) and a new one opened (the sink's part of RecvBarrierSV).
	SinkPreCommit = "PreCommit"
	// SinkComplete: the coordinator declares a checkpoint complete
	// (CompleteCkpt): it is the one a restore goes back to.
	SinkComplete = "Complete"
	// SinkCommit: a pre-committed transaction of a complete checkpoint is
	// committed (COMMIT PREPARED): Commit(i), or RestoreS for those the
	// failure left pre-committed.
	SinkCommit = "Commit"
	// SinkAbort: a transaction the restore does not keep is aborted
	// (ROLLBACK PREPARED, or the open one rolled back): RestoreS.
	SinkAbort = "Abort"
	// SinkStoreAbort: the store aborted a pre-committed transaction on
	// its own, a transaction timeout (StoreAbort(i)).
	SinkStoreAbort = "StoreAbort"
	// SinkReportLoss: the sink found a complete checkpoint's transaction
	// aborted by the store and reported its output lost (ReportLossV(i, silent), or
	// RestoreS): never silent.
	SinkReportLoss = "ReportLoss"
)

// SinkActions are the sink's trace actions, in the order above.
var SinkActions = []string{SinkPreCommit, SinkComplete, SinkCommit, SinkAbort, SinkStoreAbort, SinkReportLoss}

// TxnStatus is a sink transaction's status (TxnStatus of
// tla/BarrierSink.tla).
type TxnStatus string

// The statuses of a sink transaction.
const (
	TxnOpen         TxnStatus = "open"         // taking records
	TxnPreCommitted TxnStatus = "precommitted" // its barrier's snapshot taken; waiting for completion
	TxnCommitted    TxnStatus = "committed"    // its output is in the store
	TxnAborted      TxnStatus = "aborted"      // rolled back (its records are replayed, or reported lost)
	TxnTimedOut     TxnStatus = "timedout"     // aborted by the store on its own; the sink has not noticed yet
)

// SinkTxn is a sink transaction as a trace event carries it: its index
// among the sink's transactions (from 1, in the order opened), the
// checkpoint it was pre-committed for (0 while open), and the records it
// holds.
type SinkTxn struct {
	Txn  int             `json:"txn"`
	Ckpt int             `json:"ckpt,omitempty"`
	Recs []BarrierRecord `json:"recs,omitempty"`
}

// The properties of tla/BarrierSink.tla.
const (
	// PropSinkTypeOK: the sink's variables are in their types.
	PropSinkTypeOK Property = "SinkTypeOK"
	// PropNoDuplicateOutput: the store never holds a record twice.
	PropNoDuplicateOutput Property = "NoDuplicateOutput"
	// PropExactlyOnceOutput: the store never holds a record twice, and
	// once every complete checkpoint's transaction is settled it holds
	// exactly the sink's output at the latest complete checkpoint, less
	// the reported losses.
	PropExactlyOnceOutput Property = "ExactlyOnceOutput"
	// PropCommittedOnlyComplete: a committed transaction belongs to a
	// complete checkpoint.
	PropCommittedOnlyComplete Property = "CommittedOnlyComplete"
	// PropCompleteCommitted (liveness): every complete checkpoint's
	// transaction is eventually committed, or its loss reported.
	PropCompleteCommitted Property = "CompleteCommitted"
)

// SinkInvariants are the state invariants of tla/BarrierSink.tla, in the
// order of the spec.
var SinkInvariants = []Property{PropSinkTypeOK, PropNoDuplicateOutput, PropExactlyOnceOutput, PropCommittedOnlyComplete}

// SinkTemporal are the temporal properties of tla/BarrierSink.tla.
var SinkTemporal = []Property{PropCompleteCommitted}
