package sink

import (
	"io"
	"slices"
	"sync"

	"github.com/markerwave/markerwave/spec"
)

// Trace records what a two-phase-commit sink did as a sink trace
// (spec.SinkTrace, traces/README.md "Sink traces"): each Driver step that
// is a step of tla/BarrierSink.tla, as the Driver saw it happen. Share
// one Trace between the Drivers of a run's incarnations (Driver.SetTrace
// before Start): a Start after the first is the restore. A nil *Trace
// records nothing.
//
// The Driver's snapshot ids repeat after a restore (the next one is the
// latest complete one's plus one); the spec's checkpoint numbers do not:
// the trace numbers checkpoints as the spec does, the restore moving on
// by one if the sink had pre-committed for the checkpoint abandoned.
type Trace struct {
	mu       sync.Mutex
	names    []string // source names by node index
	events   []spec.SinkEvent
	txns     []traceTxn // every transaction, in the order opened
	ckpt     int        // the spec's checkpoint in progress
	done     int        // the latest complete one
	off      int        // checkpoint = snapshot id + off in this incarnation
	pre      bool       // the sink pre-committed for ckpt
	started  bool
	restores int
	aborts   int
}

// traceTxn is a transaction as the trace knows it.
type traceTxn struct {
	ckpt int // 0 while open
	recs []spec.BarrierRecord
	st   spec.TxnStatus
}

// NewTrace returns an empty trace; names[n] is node n's name (the records'
// sources).
func NewTrace(names []string) *Trace {
	return &Trace{names: names, ckpt: 1, txns: []traceTxn{{st: spec.TxnOpen}}}
}

// Trace returns what was recorded: the header's bounds are those the run
// kept within (at least 1 checkpoint); drained claims every complete
// checkpoint's transaction is settled (a run Finish ended).
func (t *Trace) Trace(drained bool) *spec.SinkTrace {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := spec.SinkHeader{Format: spec.SinkTraceFormat, MaxCkpt: max(1, t.lastCkpt()), MaxRestores: t.restores,
		MaxAborts: t.aborts, Drained: drained, Source: "markerwave impl/dataflow/sink Driver"}
	return &spec.SinkTrace{Header: h, Events: slices.Clone(t.events)}
}

// Write writes the trace (Trace) to w.
func (t *Trace) Write(w io.Writer, drained bool) error {
	return spec.WriteSinkTrace(w, t.Trace(drained))
}

// lastCkpt is the highest checkpoint a transaction was pre-committed for.
func (t *Trace) lastCkpt() int {
	m := t.done
	for _, x := range t.txns {
		m = max(m, x.ckpt)
	}
	return m
}

// event appends a step on transaction i (from 1).
func (t *Trace) event(action string, i int) {
	x := t.txns[i-1]
	t.events = append(t.events, spec.SinkEvent{Action: action, Txn: &spec.SinkTxn{Txn: i, Ckpt: x.ckpt, Recs: slices.Clone(x.recs)}})
}

// txnOf is the index (from 1) of snapshot snap's transaction in this
// incarnation, 0 if none.
func (t *Trace) txnOf(snap int) int {
	for i := len(t.txns); i > 0; i-- {
		if t.txns[i-1].ckpt == snap+t.off {
			return i
		}
	}
	return 0
}

// take notes record r in the open transaction (ProcessS).
func (t *Trace) take(r Record) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	o := &t.txns[len(t.txns)-1]
	o.recs = append(o.recs, spec.BarrierRecord{Src: t.name(r.Src), I: r.I})
}

// name is node n's name.
func (t *Trace) name(n int) string {
	if n >= 0 && n < len(t.names) {
		return t.names[n]
	}
	return "?"
}

// preCommit notes snapshot snap's transaction pre-committed (the sink's
// RecvBarrierSV) and the next one opened.
func (t *Trace) preCommit(snap int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	i := len(t.txns)
	t.txns[i-1].ckpt, t.txns[i-1].st = snap+t.off, spec.TxnPreCommitted
	t.ckpt, t.pre = snap+t.off, true
	t.event(spec.SinkPreCommit, i)
	t.events[len(t.events)-1].Ckpt = t.ckpt
	t.txns = append(t.txns, traceTxn{st: spec.TxnOpen})
}

// complete notes the coordinator's notification that snapshot snap is
// complete (CompleteCkpt), once per checkpoint.
func (t *Trace) complete(snap int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.completeLocked(snap)
}

// completeLocked is complete; the caller holds t.mu.
func (t *Trace) completeLocked(snap int) {
	c := snap + t.off
	if c <= t.done || !t.pre || c != t.ckpt {
		return // a repeated notification, or one the sink has not recorded for
	}
	t.done, t.ckpt, t.pre = c, c+1, false
	t.events = append(t.events, spec.SinkEvent{Action: spec.SinkComplete, Ckpt: c})
}

// committed notes the committer's outcome for snapshot snap: committed
// (Commit), or found aborted by the store (StoreAbort, which happened
// before, then ReportLoss).
func (t *Trace) committed(snap int, lost bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := t.txnOf(snap); i > 0 {
		t.settle(i, map[bool]string{false: spec.SinkCommit, true: spec.SinkReportLoss}[lost])
	}
}

// settle notes transaction i settled by action (Commit, Abort,
// ReportLoss: the store's abort before it).
func (t *Trace) settle(i int, action string) {
	x := &t.txns[i-1]
	if action == spec.SinkReportLoss && x.st != spec.TxnTimedOut {
		x.st = spec.TxnTimedOut
		t.aborts++
		t.event(spec.SinkStoreAbort, i)
	}
	x.st = map[string]spec.TxnStatus{spec.SinkCommit: spec.TxnCommitted, spec.SinkAbort: spec.TxnAborted, spec.SinkReportLoss: spec.TxnAborted}[action]
	t.event(action, i)
}

// start notes a Driver's Start: at the first, nothing (InitS); at a
// later one the coordinator's completions the sink had not been
// notified of (complete), the restore (RestoreSV) and what its recovery
// r did to each transaction left unsettled, in order; next is the
// snapshot id the restored run goes on with.
func (t *Trace) start(complete []int, r Recovery, next int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.started {
		t.started, t.off = true, t.ckpt-next
		return
	}
	for _, s := range slices.Sorted(slices.Values(complete)) {
		t.completeLocked(s)
	}
	t.restores++
	t.ckpt += map[bool]int{true: 1}[t.pre]
	t.pre = false
	t.lostBefore(r)
	t.events = append(t.events, spec.SinkEvent{Action: spec.SinkRestore, Ckpt: t.ckpt})
	for i := range t.txns {
		if a := recovered(t.txns[i], r, t.off); a != "" {
			t.settle(i+1, a)
		}
	}
	t.txns = append(t.txns, traceTxn{st: spec.TxnOpen})
	t.off = t.ckpt - next
}

// lostBefore notes, before the restore, the store's own aborts the
// recovery found: a pre-committed transaction the store no longer holds,
// neither committed nor aborted by the recovery, or a complete one it
// found lost (r.Lost: it may abort what the store left of it).
func (t *Trace) lostBefore(r Recovery) {
	for i, x := range t.txns {
		snap := x.ckpt - t.off
		gone := slices.Contains(r.Lost, snap) || !slices.Contains(r.Committed, snap) && !slices.Contains(r.Aborted, snap)
		if x.st == spec.TxnPreCommitted && gone {
			t.txns[i].st = spec.TxnTimedOut
			t.aborts++
			t.event(spec.SinkStoreAbort, i+1)
		}
	}
}

// recovered is the step that settled x in recovery r: Commit or Abort as
// r says, ReportLoss for a complete one the store aborted (r.Lost), Abort
// for another it aborted and for the open transaction (the store dropped
// it with the sink's connection, or r aborted it); "" for one settled
// before.
func recovered(x traceTxn, r Recovery, off int) string {
	snap := x.ckpt - off
	switch {
	case x.st == spec.TxnOpen:
		return spec.SinkAbort
	case x.st == spec.TxnTimedOut && slices.Contains(r.Lost, snap):
		return spec.SinkReportLoss
	case x.st == spec.TxnTimedOut:
		return spec.SinkAbort
	case x.st != spec.TxnPreCommitted:
		return ""
	case slices.Contains(r.Committed, snap):
		return spec.SinkCommit
	}
	return spec.SinkAbort // r.Aborted: lostBefore took the others
}
