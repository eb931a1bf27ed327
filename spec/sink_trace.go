package spec

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// A sink trace is what a two-phase-commit sink did, in JSON Lines
// (traces/README.md, "Sink traces"; traces/sink-trace.schema.json): a
// header with the checkpoint bounds (and, optionally, the graph), then
// one event a line, one per step of the sink's part of
// tla/BarrierSink.tla's actions, in the order taken: PreCommit (the
// sink's RecvBarrierSV), Complete (CompleteCkpt), Commit (Commit(i)),
// StoreAbort, ReportLoss (ReportLossV) and Restore (RestoreSV), the
// restore followed by one Commit, Abort or ReportLoss for each
// transaction it settles, in the order of the transactions.
//
// It is a format of its own, not events of the barrier trace: a barrier
// trace holds one snapshot, while the sink's spec is a sequence of
// checkpoints across restores (ckpt, done, txns): a transaction's
// checkpoint is the spec's checkpoint number, which never repeats, and
// a restored run's snapshot ids do; the writer maps one to the other.

// SinkTraceFormat is the format tag of a sink trace's header.
const SinkTraceFormat = "markerwave-sink-trace/1"

// SinkRestore is a sink trace's restore step (RestoreSV): ckpt is the
// checkpoint in progress after it.
const SinkRestore = "Restore"

// SinkTraceActions are a sink trace's actions: SinkActions and
// SinkRestore.
var SinkTraceActions = append(slices.Clone(SinkActions), SinkRestore)

// SinkHeader is a sink trace's first line: the bounds of
// tla/BarrierSink.tla (MaxCkpt, MaxRestores, MaxAborts) the run kept
// within, and whether it claims to have drained (every complete
// checkpoint's transaction settled at the end: CompleteCommitted).
type SinkHeader struct {
	Format      string        `json:"format"`
	MaxCkpt     int           `json:"max_ckpt"`
	MaxRestores int           `json:"max_restores"`
	MaxAborts   int           `json:"max_aborts"`
	Graph       *BarrierGraph `json:"graph,omitempty"`
	Drained     bool          `json:"drained,omitempty"`
	Source      string        `json:"source,omitempty"`
	Note        string        `json:"note,omitempty"`
}

// SinkEvent is one step of the sink: its action (SinkTraceActions), the
// checkpoint (Complete's, PreCommit's, or the one in progress after a
// Restore) and the transaction it acts on (every action but Complete
// and Restore): its index, its checkpoint and its records.
type SinkEvent struct {
	Action string   `json:"action"`
	Ckpt   int      `json:"ckpt,omitempty"`
	Txn    *SinkTxn `json:"txn,omitempty"`
}

// SinkTrace is a sink trace: its header, its events and their lines in
// the file.
type SinkTrace struct {
	Header SinkHeader
	Events []SinkEvent
	Lines  []int
}

// IsSinkTrace reports whether first, a trace's first line, is a sink
// trace's header.
func IsSinkTrace(first []byte) bool { return hasFormat(first, SinkTraceFormat) }

// ReadSinkTrace reads a sink trace strictly (DecodeStrict): a header of
// this format with bounds in range (and a graph Check accepts, if
// given), then events of known actions carrying what their action needs
// (CheckSinkEvent). What the steps do is the audit's to judge. An error
// names the file's line: "trace line N: ...".
func ReadSinkTrace(r io.Reader) (*SinkTrace, error) {
	var tr *SinkTrace
	header := func(b []byte) (err error) {
		tr, err = newSinkTrace(b)
		return err
	}
	if err := readTraceFile(r, header, func(b []byte, line int) error { return tr.readEvent(b, line) }); err != nil {
		return nil, err
	}
	return tr, nil
}

// newSinkTrace is the trace whose header line is b.
func newSinkTrace(b []byte) (*SinkTrace, error) {
	h, err := readSinkHeader(b)
	if err != nil {
		return nil, err
	}
	return &SinkTrace{Header: h}, nil
}

// readEvent reads event line b (number line) and appends it.
func (tr *SinkTrace) readEvent(b []byte, line int) error {
	var ev SinkEvent
	if err := DecodeStrict(b, &ev); err != nil {
		return err
	}
	if err := CheckSinkEvent(ev); err != nil {
		return err
	}
	tr.Events = append(tr.Events, ev)
	tr.Lines = append(tr.Lines, line)
	return nil
}

// readSinkHeader reads header line b.
func readSinkHeader(b []byte) (SinkHeader, error) {
	var h SinkHeader
	if err := DecodeStrict(b, &h); err != nil {
		return h, fmt.Errorf("header: %w", err)
	}
	switch {
	case h.Format != SinkTraceFormat:
		return h, fmt.Errorf("header: format %q, want %q", h.Format, SinkTraceFormat)
	case h.MaxCkpt < 1:
		return h, fmt.Errorf("header: max_ckpt %d: at least 1 (MaxCkpt \\in Nat \\ {0})", h.MaxCkpt)
	case h.MaxRestores < 0 || h.MaxAborts < 0:
		return h, fmt.Errorf("header: max_restores %d, max_aborts %d: not negative", h.MaxRestores, h.MaxAborts)
	case h.Graph != nil:
		return h, h.Graph.Check()
	}
	return h, nil
}

// CheckSinkEvent checks that ev names a sink trace action and carries
// what it needs: a transaction (from 1) on every action but Complete
// and Restore, which carry none; a checkpoint (from 1) on Complete,
// PreCommit and Restore, PreCommit's the same as its transaction's.
func CheckSinkEvent(ev SinkEvent) error {
	if !slices.Contains(SinkTraceActions, ev.Action) {
		return fmt.Errorf("action %q: not a sink trace action (%v)", ev.Action, SinkTraceActions)
	}
	if err := checkSinkFields(ev); err != nil {
		return err
	}
	return checkSinkValues(ev)
}

// checkSinkValues checks ev's numbers: checkpoints and transactions
// from 1, a PreCommit's checkpoint its transaction's.
func checkSinkValues(ev SinkEvent) error {
	switch {
	case ev.Ckpt < 0:
		return fmt.Errorf("%s: ckpt %d: from 1", ev.Action, ev.Ckpt)
	case ev.Txn != nil && (ev.Txn.Txn < 1 || ev.Txn.Ckpt < 0):
		return fmt.Errorf("%s: txn %d, ckpt %d: txn from 1, ckpt not negative", ev.Action, ev.Txn.Txn, ev.Txn.Ckpt)
	case ev.Action == SinkPreCommit && ev.Txn.Ckpt != ev.Ckpt:
		return fmt.Errorf("%s: txn's ckpt %d is not the event's %d", ev.Action, ev.Txn.Ckpt, ev.Ckpt)
	}
	return nil
}

// checkSinkFields checks that ev has a txn and a ckpt where its action
// needs them, and none where it does not.
func checkSinkFields(ev SinkEvent) error {
	needTxn := ev.Action != SinkComplete && ev.Action != SinkRestore
	needCkpt := ev.Action == SinkComplete || ev.Action == SinkPreCommit || ev.Action == SinkRestore
	what := map[bool]string{true: "missing", false: "not allowed"}
	switch {
	case needTxn != (ev.Txn != nil):
		return fmt.Errorf("%s: txn %s", ev.Action, what[needTxn])
	case needCkpt != (ev.Ckpt != 0):
		return fmt.Errorf("%s: ckpt %s", ev.Action, what[needCkpt])
	}
	return nil
}

// WriteSinkTrace writes tr as a sink trace: its header, then its events,
// one a line.
func WriteSinkTrace(w io.Writer, tr *SinkTrace) error {
	h := tr.Header
	h.Format = SinkTraceFormat
	enc := json.NewEncoder(w)
	if err := enc.Encode(h); err != nil {
		return err
	}
	for _, ev := range tr.Events {
		if err := enc.Encode(ev); err != nil {
			return err
		}
	}
	return nil
}
