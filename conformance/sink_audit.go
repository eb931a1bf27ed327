package conformance

import (
	"fmt"
	"os"
	"slices"

	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/spec"
)

// The audit of a sink trace (spec.SinkTrace) against tla/BarrierSink.tla
// seen from the sink (barrier.SinkProj): each event must be a step the
// spec (SpecSink) enables, with the transaction it names as the model
// has it (its checkpoint and records), and a restore must be followed by
// exactly the settling steps RestoreSV takes (a Commit, Abort or
// ReportLoss per transaction it changes, in order). After every step the
// invariants NoDuplicateOutput, ExactlyOnceOutput and
// CommittedOnlyComplete must hold, and at the end of a drained run no
// complete checkpoint's transaction may be left unsettled
// (CompleteCommitted). Where the run leaves the spec, the steps are
// taken as the trace claims them (sinkClaim) to name the property the
// claimed run breaks.

// IsSinkTraceFile reports whether the file at path is a sink trace: its
// first non-blank line is a sink trace's header.
func IsSinkTraceFile(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && firstLineIs(b, spec.IsSinkTrace)
}

// ReadSinkTraceFile reads the sink trace at path (spec.ReadSinkTrace).
func ReadSinkTraceFile(path string) (*spec.SinkTrace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr, err := spec.ReadSinkTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tr, nil
}

// settleStep is a step a restore owes: the trace action that settles
// transaction txn (from 1).
type settleStep struct {
	action string
	txn    int
}

// sinkReplay is one sink trace's replay.
type sinkReplay struct {
	tr  *spec.SinkTrace
	p   *barrier.SinkProj
	due []settleStep // what the latest restore settled and the trace has not shown yet
}

// AuditSink replays sink trace tr against tla/BarrierSink.tla's SpecSink
// (the sink's projection) and checks its properties. The model holds a
// transaction's records as a set of at most 64 keys; every step's
// enabling and every property is per key or blind to the records, so a
// trace naming more is replayed once per 64 of its records (sinkChunks),
// each replay taking every step with only those records, and the first
// that fails is the verdict.
func AuditSink(tr *spec.SinkTrace, opts Options) Report {
	var r Report
	for _, part := range sinkChunks(tr) {
		if r = auditSinkPart(part, opts); !r.OK() {
			return r
		}
		opts.Progress = nil // once is enough
	}
	return r
}

// sinkChunks is tr as traces of at most 64 records each: tr itself if it
// names no more.
func sinkChunks(tr *spec.SinkTrace) []*spec.SinkTrace {
	var keys []spec.BarrierRecord
	seen := map[spec.BarrierRecord]int{}
	for _, ev := range tr.Events {
		for _, r := range txnRecs(ev) {
			k := spec.BarrierRecord{Src: r.Src, I: r.I}
			if _, ok := seen[k]; !ok {
				seen[k] = len(keys)
				keys = append(keys, k)
			}
		}
	}
	if len(keys) <= 64 {
		return []*spec.SinkTrace{tr}
	}
	var parts []*spec.SinkTrace
	for lo := 0; lo < len(keys); lo += 64 {
		parts = append(parts, sinkChunk(tr, seen, lo))
	}
	return parts
}

// txnRecs is the records ev's transaction lists, if any.
func txnRecs(ev spec.SinkEvent) []spec.BarrierRecord {
	if ev.Txn == nil {
		return nil
	}
	return ev.Txn.Recs
}

// sinkChunk is tr with only the records whose index in seen is in
// lo..lo+63.
func sinkChunk(tr *spec.SinkTrace, seen map[spec.BarrierRecord]int, lo int) *spec.SinkTrace {
	part := &spec.SinkTrace{Header: tr.Header, Lines: tr.Lines, Events: make([]spec.SinkEvent, len(tr.Events))}
	for i, ev := range tr.Events {
		if ev.Txn != nil {
			t := *ev.Txn
			t.Recs = nil
			for _, r := range ev.Txn.Recs {
				if k := seen[spec.BarrierRecord{Src: r.Src, I: r.I}]; k >= lo && k < lo+64 {
					t.Recs = append(t.Recs, r)
				}
			}
			ev.Txn = &t
		}
		part.Events[i] = ev
	}
	return part
}

// auditSinkPart is AuditSink on a trace of at most 64 records.
func auditSinkPart(tr *spec.SinkTrace, opts Options) Report {
	h := tr.Header
	p, err := barrier.NewSinkProj(h.MaxCkpt, h.MaxRestores, h.MaxAborts, barrier.SinkSpec)
	if err != nil {
		return Report{Err: err}
	}
	rp := &sinkReplay{tr: tr, p: p}
	r := Report{}
	if r.Steps, r.Divergence = rp.steps(opts); r.Divergence != nil {
		r.Violations = explainSink(tr)
		return r
	}
	r.Divergence = rp.end(opts.Drained || h.Drained)
	if r.Divergence != nil && r.Divergence.Property == spec.PropCompleteCommitted {
		r.Violations = []Violation{{Property: spec.PropCompleteCommitted, Detail: r.Divergence.Detail}}
	}
	r.Snapshots = p.St.Done
	return r
}

// steps replays the events: how many it took, and the divergence it
// stopped at, if any.
func (rp *sinkReplay) steps(opts Options) (int, *Divergence) {
	for i, ev := range rp.tr.Events {
		if d := rp.step(ev); d != nil {
			d.Step, d.Line, d.Action = i+1, at(rp.tr.Lines, i), sinkLabel(ev)
			return i, d
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(rp.tr.Events))
		}
	}
	return len(rp.tr.Events), nil
}

// at is lines[i], 0 if there is none.
func at(lines []int, i int) int {
	if i < len(lines) {
		return lines[i]
	}
	return 0
}

// step replays ev: a divergence if the spec does not take it, or takes
// it to a state that breaks an invariant.
func (rp *sinkReplay) step(ev spec.SinkEvent) *Divergence {
	if err := rp.take(ev); err != nil {
		return &Divergence{Property: spec.CheckEnabled, Detail: err.Error()}
	}
	if prop := rp.p.Violated(); prop != "" {
		return &Divergence{Property: prop, Detail: fmt.Sprintf("%s fails after this step (%s)", prop, sinkStore(rp.p))}
	}
	return nil
}

// take applies ev to the projection: a settling step a restore owes, or
// the action ev names.
func (rp *sinkReplay) take(ev spec.SinkEvent) error {
	if len(rp.due) > 0 {
		return rp.settle(ev)
	}
	switch ev.Action {
	case spec.SinkPreCommit:
		return rp.preCommit(ev)
	case spec.SinkComplete:
		return rp.p.Complete(ev.Ckpt)
	case spec.SinkRestore:
		return rp.restore(ev.Ckpt)
	case spec.SinkAbort:
		return fmt.Errorf("transaction %d aborted outside a restore: only RestoreSV aborts the sink's transactions", ev.Txn.Txn)
	}
	if err := rp.sameTxn(ev.Txn); err != nil {
		return err
	}
	return map[string]func(int) error{spec.SinkCommit: rp.p.Commit, spec.SinkStoreAbort: rp.p.StoreAbort,
		spec.SinkReportLoss: rp.p.ReportLoss}[ev.Action](ev.Txn.Txn)
}

// preCommit is the sink's part of RecvBarrierSV: the open transaction,
// the one ev names, pre-committed for ev's checkpoint with ev's records.
func (rp *sinkReplay) preCommit(ev spec.SinkEvent) error {
	if open := len(rp.p.St.Txns); ev.Txn.Txn != open {
		return fmt.Errorf("transaction %d pre-committed: the open transaction is %d (txns[Last])", ev.Txn.Txn, open)
	}
	recs, err := rp.p.Set(ev.Txn.Recs)
	if err != nil {
		return err
	}
	return rp.p.PreCommit(ev.Ckpt, recs)
}

// restore takes RestoreSV and notes the settling steps it owes: one per
// transaction whose status it changed (settleAction).
func (rp *sinkReplay) restore(ckpt int) error {
	before := slices.Clone(rp.p.St.Txns)
	if err := rp.p.Restore(ckpt); err != nil {
		return err
	}
	for i, t := range before {
		if a := settleAction(t, rp.p.St.Txns[i], rp.p.St.Done); a != "" {
			rp.due = append(rp.due, settleStep{a, i + 1})
		}
	}
	return nil
}

// settleAction is the trace action that shows a restore (or
// ReportLossV) turning t into nt, done the latest complete checkpoint: a
// commit, a reported loss (a timed-out transaction of a complete
// checkpoint) or an abort; "" if the status is unchanged.
func settleAction(t, nt barrier.Txn, done int) string {
	switch {
	case t.St == nt.St:
		return ""
	case nt.St == spec.TxnCommitted:
		return spec.SinkCommit
	case t.St == spec.TxnTimedOut && t.Ck != 0 && t.Ck <= done:
		return spec.SinkReportLoss
	}
	return spec.SinkAbort
}

// settle checks ev against the next settling step the restore owes.
func (rp *sinkReplay) settle(ev spec.SinkEvent) error {
	want := rp.due[0]
	if ev.Txn == nil || ev.Action != want.action || ev.Txn.Txn != want.txn {
		return fmt.Errorf("the restore settles transaction %d by %s (RestoreSV's Resolve), and the trace's next step is %s", want.txn, want.action, sinkLabel(ev))
	}
	rp.due = rp.due[1:]
	return rp.sameTxn(ev.Txn)
}

// sameTxn checks that the transaction an event names is the model's:
// the same checkpoint and, where the event lists them (a commit always
// does), the same records; an open transaction's records (an abort's)
// are not checked.
func (rp *sinkReplay) sameTxn(et *spec.SinkTxn) error {
	if et.Txn > len(rp.p.St.Txns) {
		return fmt.Errorf("transaction %d: the sink has opened %d (i \\in DOMAIN txns is FALSE)", et.Txn, len(rp.p.St.Txns))
	}
	t := rp.p.St.Txns[et.Txn-1]
	if et.Ckpt != t.Ck {
		return fmt.Errorf("transaction %d: checkpoint %d, the model's is %d", et.Txn, et.Ckpt, t.Ck)
	}
	if t.Ck == 0 {
		return nil // never pre-committed: its records are ProcessS's, which a sink trace does not hold
	}
	recs, err := rp.p.Set(et.Recs)
	if err != nil {
		return err
	}
	if recs != t.Recs && (len(et.Recs) > 0 || t.St == spec.TxnPreCommitted) {
		return fmt.Errorf("transaction %d: records %s, the model's are %s", et.Txn, recordList(et.Recs), recordList(rp.p.Records(t.Recs)))
	}
	return nil
}

// end checks the end of the run: no settling step owed, and in a
// drained run every complete checkpoint's transaction settled
// (CompleteCommitted: at a drained end nothing is left to settle it).
func (rp *sinkReplay) end(drained bool) *Divergence {
	if len(rp.due) > 0 {
		w := rp.due[0]
		return &Divergence{Property: spec.CheckEnabled, Detail: fmt.Sprintf("the trace ends before the restore's %s of transaction %d", w.action, w.txn)}
	}
	if u := rp.p.Unsettled(); drained && len(u) > 0 {
		return &Divergence{Property: spec.PropCompleteCommitted, Detail: fmt.Sprintf("the run drained with transaction %d of complete checkpoint %d neither committed nor its loss reported", u[0], rp.p.St.Txns[u[0]-1].Ck)}
	}
	return nil
}
