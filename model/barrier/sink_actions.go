package barrier

import (
	"fmt"
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// The actions of tla/BarrierSink.tla (lines 128-248), definition by
// definition. Each takes the current state and returns the successor, or
// the first enabling conjunct that is false; it never modifies its input.

// The enabling conjuncts tla/BarrierSink.tla adds (sinkConjunctText
// quotes them).
const (
	// NoCkpt: ckpt <= MaxCkpt (InjectS, CompleteCkpt): no checkpoint left
	// to start.
	NoCkpt Conjunct = ForceAlignedPending + 1 + iota
	// NotPending: Pending(i) (Commit, ReportLossV).
	NotPending
	// NoTxn: i \in DOMAIN txns (StoreAbort).
	NoTxn
	// NotPreCommitted: txns[i].st = "precommitted" (Commit, StoreAbort).
	NotPreCommitted
	// AbortsSpent: aborts < MaxAborts (StoreAbort).
	AbortsSpent
	// NotTimedOut: txns[i].st = "timedout" (ReportLossV).
	NotTimedOut
	// RestoresSpent: restores < MaxRestores (RestoreSV).
	RestoresSpent
)

// SinkActionKind names an action of tla/BarrierSink.tla.
type SinkActionKind uint8

// The actions, in the order of NextS's disjuncts (lines 251-259).
const (
	SinkEmit          SinkActionKind = iota // EmitS(s), line 128
	SinkInject                              // InjectS(s), line 129
	SinkProcess                             // ProcessS(e), line 131
	SinkRecvBarrier                         // RecvBarrierSV(e, arrival), line 143
	SinkCompleteCkpt                        // CompleteCkpt, line 157
	SinkCommitTxn                           // Commit(i), line 170
	SinkStoreAbortTxn                       // StoreAbort(i), line 179
	SinkReportLossTxn                       // ReportLossV(i, silent), line 194
	SinkRestore                             // RestoreSV(noabort, forget, silent), line 226
)

// SinkAction is one instance of an action: Node for EmitS and InjectS,
// Edge for ProcessS and RecvBarrierSV, Txn (from 1) for Commit,
// StoreAbort and ReportLossV.
type SinkAction struct {
	Kind SinkActionKind
	Node int
	Edge int
	Txn  int
}

const modSink = "BarrierSink.tla"

// sinkConjunctText is each enabling conjunct tla/BarrierSink.tla adds, as
// it writes it.
var sinkConjunctText = map[SinkActionKind]map[Conjunct]spec.Quote{
	SinkInject:        {NoCkpt: {TLA: "ckpt <= MaxCkpt", Module: modSink, Line: 129}},
	SinkCompleteCkpt:  {NoCkpt: {TLA: "ckpt <= MaxCkpt", Module: modSink, Line: 158}, NotComplete: {TLA: "Complete", Module: modSink, Line: 159}},
	SinkCommitTxn:     {NotPending: {TLA: "Pending(i)", Module: modSink, Line: 171}, NotPreCommitted: {TLA: `txns[i].st = "precommitted"`, Module: modSink, Line: 172}},
	SinkStoreAbortTxn: {NoTxn: {TLA: "i \\in DOMAIN txns", Module: modSink, Line: 180}, NotPreCommitted: {TLA: `txns[i].st = "precommitted"`, Module: modSink, Line: 181}, AbortsSpent: {TLA: "aborts < MaxAborts", Module: modSink, Line: 182}},
	SinkReportLossTxn: {NotPending: {TLA: "Pending(i)", Module: modSink, Line: 195}, NotTimedOut: {TLA: `txns[i].st = "timedout"`, Module: modSink, Line: 196}},
	SinkRestore:       {RestoresSpent: {TLA: "restores < MaxRestores", Module: modSink, Line: 227}},
}

// baseKind is the action of tla/BarrierSnapshots.tla a sink action wraps.
var baseKind = map[SinkActionKind]ActionKind{SinkEmit: ActEmit, SinkInject: ActInject, SinkProcess: ActProcess, SinkRecvBarrier: ActRecvBarrier}

// quote is where conjunct k of a's definition is written: the sink's, or
// that of the base action it wraps.
func (a SinkAction) quote(k Conjunct) spec.Quote {
	if q, ok := sinkConjunctText[a.Kind][k]; ok {
		return q
	}
	return k.Source(baseKind[a.Kind])
}

// emitS mirrors EmitS(s) (line 128).
func emitS(cfg *SinkConfig, st *SinkState, s int) (*SinkState, Conjunct) {
	b, k := emit(cfg.Base, st.B, s)
	if k != Enabled {
		return nil, k
	}
	return st.withBase(b), Enabled
}

// injectS mirrors InjectS(s) (line 129).
func injectS(cfg *SinkConfig, st *SinkState, s int) (*SinkState, Conjunct) {
	if st.Ckpt > cfg.MaxCkpt {
		return nil, NoCkpt
	}
	b, k := inject(cfg.Base, st.B, s, true)
	if k != Enabled {
		return nil, k
	}
	return st.withBase(b), Enabled
}

// processS mirrors ProcessS(e) (lines 131-137): ProcessV(e, TRUE, TRUE),
// and the sink adds the record to its open transaction.
func processS(cfg *SinkConfig, st *SinkState, e int) (*SinkState, Conjunct) {
	b, k := process(cfg.Base, st.B, e, true, true)
	if k != Enabled {
		return nil, k
	}
	ns := st.withBase(b)
	if cfg.Base.Edges[e][1] == cfg.Base.snk {
		r := st.B.Q[e][0]
		ns.Txns[ns.last()].Recs |= 1 << cfg.Base.key(r.Src, r.I)
	}
	return ns, Enabled
}

// recvBarrierS mirrors RecvBarrierSV(e, arrival) (lines 143-152):
// RecvBarrierV(e, TRUE, TRUE), and when the sink records on this barrier
// it pre-commits its open transaction for checkpoint ckpt (arrival: it
// commits it) and opens a new one.
func recvBarrierS(cfg *SinkConfig, st *SinkState, e int) (*SinkState, Conjunct) {
	b, k := recvBarrier(cfg.Base, st.B, e, true, true)
	if k != Enabled {
		return nil, k
	}
	ns := st.withBase(b)
	snk := cfg.Base.snk
	if cfg.Base.Edges[e][1] != snk || st.B.Has(snk) || !b.Has(snk) {
		return ns, Enabled
	}
	t := &ns.Txns[ns.last()]
	t.Ck, t.St = st.Ckpt, spec.TxnPreCommitted
	if cfg.flags.arrival {
		t.St = spec.TxnCommitted
		add(ns.Store, t.Recs)
	}
	ns.Txns = append(ns.Txns, openTxn)
	return ns, Enabled
}

// completeCkpt mirrors CompleteCkpt (lines 157-166).
func completeCkpt(cfg *SinkConfig, st *SinkState) (*SinkState, Conjunct) {
	if st.Ckpt > cfg.MaxCkpt {
		return nil, NoCkpt
	}
	if !Complete(cfg.Base, st.B) {
		return nil, NotComplete
	}
	ns := st.Clone()
	ns.Done = st.Ckpt
	ns.Snap = Snap{Off: slices.Clone(st.B.RecOff), Cnt: slices.Clone(st.B.RecCnt), Out: slices.Clone(st.B.RecOut),
		Q: cloneQ(st.B.RecQ), Sent: slices.Clone(st.B.CutSent), Rcvd: slices.Clone(st.B.CutRcvd)}
	ns.Ckpt = st.Ckpt + 1
	rearm(cfg.Base, ns.B)
	return ns, Enabled
}

// commitTxn mirrors Commit(i) (lines 170-175).
func commitTxn(st *SinkState, i int) (*SinkState, Conjunct) {
	if !st.pending(i) {
		return nil, NotPending
	}
	if st.Txns[i-1].St != spec.TxnPreCommitted {
		return nil, NotPreCommitted
	}
	ns := st.Clone()
	ns.Txns[i-1].St = spec.TxnCommitted
	add(ns.Store, st.Txns[i-1].Recs)
	return ns, Enabled
}

// storeAbort mirrors StoreAbort(i) (lines 179-185).
func storeAbort(cfg *SinkConfig, st *SinkState, i int) (*SinkState, Conjunct) {
	switch {
	case i < 1 || i > len(st.Txns):
		return nil, NoTxn
	case st.Txns[i-1].St != spec.TxnPreCommitted:
		return nil, NotPreCommitted
	case st.Aborts >= cfg.MaxAborts:
		return nil, AbortsSpent
	}
	ns := st.Clone()
	ns.Txns[i-1].St = spec.TxnTimedOut
	ns.Aborts++
	return ns, Enabled
}

// lose mirrors Lose(t, silent) and LossOf({t}, silent) (lines 191-192):
// t settled as lost, and the checkpoints whose loss this reports.
func lose(t Txn, silent bool) (Txn, uint64) {
	if silent {
		t.St = spec.TxnCommitted
		return t, 0
	}
	t.St = spec.TxnAborted
	return t, 1 << t.Ck
}

// reportLoss mirrors ReportLossV(i, silent) (lines 194-199).
func reportLoss(cfg *SinkConfig, st *SinkState, i int) (*SinkState, Conjunct) {
	if !st.pending(i) {
		return nil, NotPending
	}
	if st.Txns[i-1].St != spec.TxnTimedOut {
		return nil, NotTimedOut
	}
	ns := st.Clone()
	t, lost := lose(st.Txns[i-1], cfg.flags.silent)
	ns.Txns[i-1] = t
	ns.ReportedLoss |= lost
	return ns, Enabled
}

// resolve mirrors Resolve(t, noabort, forget, silent) (lines 207-214),
// with what it adds to Recommitted (lines 217-219, the records committed)
// and to reportedLoss (lines 240-242).
func resolve(st *SinkState, t Txn, f sinkFlags) (nt Txn, committed, lost uint64) {
	if st.ofComplete(t) {
		return resolveComplete(t, f)
	}
	if t.St == spec.TxnTimedOut || (t.St == spec.TxnOpen || t.St == spec.TxnPreCommitted) && !f.noabort {
		t.St = spec.TxnAborted
	}
	return t, 0, 0
}

// resolveComplete is resolve for a transaction of a complete checkpoint:
// committed if pre-committed (forget: aborted), lost if timed out.
func resolveComplete(t Txn, f sinkFlags) (nt Txn, committed, lost uint64) {
	switch t.St {
	case spec.TxnPreCommitted:
		if f.forget {
			t.St = spec.TxnAborted
			return t, 0, 0
		}
		t.St = spec.TxnCommitted
		return t, t.Recs, 0
	case spec.TxnTimedOut:
		nt, lost = lose(t, f.silent)
		return nt, 0, lost
	}
	return t, 0, 0
}

// restoreS mirrors RestoreSV(noabort, forget, silent) (lines 226-243): the
// graph back in the latest complete checkpoint's state, the checkpoint in
// progress abandoned, the transactions settled and a new one opened.
func restoreS(cfg *SinkConfig, st *SinkState) (*SinkState, Conjunct) {
	if st.Restores >= cfg.MaxRestores {
		return nil, RestoresSpent
	}
	ns := st.Clone()
	ns.Restores++
	b := ns.B
	b.Restored = true
	b.Emitted, b.Cnt, b.Out = slices.Clone(st.Snap.Off), slices.Clone(st.Snap.Cnt), slices.Clone(st.Snap.Out)
	b.Q = cloneQ(st.Snap.Q)
	b.NSent, b.NRcvd = slices.Clone(st.Snap.Sent), slices.Clone(st.Snap.Rcvd)
	rearm(cfg.Base, b)
	if st.B.Recorded != 0 {
		ns.Ckpt++
	}
	ns.settle(st, cfg.flags)
	return ns, Enabled
}

// settle is the sink's part of RestoreSV (lines 237-242) on ns, a copy of
// st: every transaction resolved, a new one opened, the recommitted
// records added to the store and the losses reported.
func (ns *SinkState) settle(st *SinkState, f sinkFlags) {
	var recommitted uint64
	for i, t := range st.Txns {
		nt, c, lost := resolve(st, t, f)
		ns.Txns[i] = nt
		recommitted |= c
		ns.ReportedLoss |= lost
	}
	ns.Txns = append(ns.Txns, openTxn)
	add(ns.Store, recommitted)
}

// sinkSteps are the actions' definitions, by SinkActionKind.
var sinkSteps = [...]func(cfg *SinkConfig, st *SinkState, a SinkAction) (*SinkState, Conjunct){
	SinkEmit: func(cfg *SinkConfig, st *SinkState, a SinkAction) (*SinkState, Conjunct) {
		return emitS(cfg, st, a.Node)
	},
	SinkInject: func(cfg *SinkConfig, st *SinkState, a SinkAction) (*SinkState, Conjunct) {
		return injectS(cfg, st, a.Node)
	},
	SinkProcess: func(cfg *SinkConfig, st *SinkState, a SinkAction) (*SinkState, Conjunct) {
		return processS(cfg, st, a.Edge)
	},
	SinkRecvBarrier: func(cfg *SinkConfig, st *SinkState, a SinkAction) (*SinkState, Conjunct) {
		return recvBarrierS(cfg, st, a.Edge)
	},
	SinkCompleteCkpt: func(cfg *SinkConfig, st *SinkState, _ SinkAction) (*SinkState, Conjunct) {
		return completeCkpt(cfg, st)
	},
	SinkCommitTxn: func(_ *SinkConfig, st *SinkState, a SinkAction) (*SinkState, Conjunct) { return commitTxn(st, a.Txn) },
	SinkStoreAbortTxn: func(cfg *SinkConfig, st *SinkState, a SinkAction) (*SinkState, Conjunct) {
		return storeAbort(cfg, st, a.Txn)
	},
	SinkReportLossTxn: func(cfg *SinkConfig, st *SinkState, a SinkAction) (*SinkState, Conjunct) {
		return reportLoss(cfg, st, a.Txn)
	},
	SinkRestore: func(cfg *SinkConfig, st *SinkState, _ SinkAction) (*SinkState, Conjunct) { return restoreS(cfg, st) },
}

// sinkStep computes a's successor of st, or the false conjunct.
func sinkStep(cfg *SinkConfig, st *SinkState, a SinkAction) (*SinkState, Conjunct) {
	return sinkSteps[a.Kind](cfg, st, a)
}

// Apply returns a's successor of st, or a *NotEnabled naming the false
// conjunct and where tla/BarrierSink.tla (or the base action it wraps)
// writes it.
func (a SinkAction) Apply(cfg *SinkConfig, st *SinkState) (*SinkState, error) {
	ns, k := sinkStep(cfg, st, a)
	if k != Enabled {
		q := a.quote(k)
		return nil, &NotEnabled{Action: a.Label(cfg), Conjunct: k, Source: q, Why: q.TLA + " is FALSE"}
	}
	return ns, nil
}

// Actions lists every instance of NextS's disjuncts (lines 251-259), in
// order: EmitS and InjectS per source, ProcessS and RecvBarrierSV per
// edge, CompleteCkpt, Commit, StoreAbort and ReportLossV per i \in
// 1..MaxTxn, RestoreSV.
func (cfg *SinkConfig) Actions() []SinkAction {
	var as []SinkAction
	for _, ba := range cfg.Base.Actions() {
		switch ba.Kind {
		case ActEmit, ActInject, ActProcess, ActRecvBarrier:
			as = append(as, SinkAction{Kind: SinkActionKind(ba.Kind), Node: ba.Node, Edge: ba.Edge})
		}
	}
	as = append(as, SinkAction{Kind: SinkCompleteCkpt})
	for _, kind := range []SinkActionKind{SinkCommitTxn, SinkStoreAbortTxn, SinkReportLossTxn} {
		for i := 1; i <= cfg.MaxTxn(); i++ {
			as = append(as, SinkAction{Kind: kind, Txn: i})
		}
	}
	return append(as, SinkAction{Kind: SinkRestore})
}

// SinkStep is a successor and the action instance that leads to it.
type SinkStep struct {
	Action SinkAction
	State  *SinkState
}

// SinkNext mirrors NextS (line 250) for cfg's variant: every enabled
// instance and its successor, in the order of Actions.
func SinkNext(cfg *SinkConfig, st *SinkState) []SinkStep {
	var out []SinkStep
	for _, a := range cfg.Actions() {
		if ns, k := sinkStep(cfg, st, a); k == Enabled {
			out = append(out, SinkStep{a, ns})
		}
	}
	return out
}

// fair reports whether FairnessS (lines 266-272) makes a weakly fair:
// every action but EmitS, StoreAbort and RestoreSV; SpecSinkNoNotify's
// fairness (lines 286-287) leaves Commit out too.
func (a SinkAction) fair(cfg *SinkConfig) bool {
	switch a.Kind {
	case SinkEmit, SinkStoreAbortTxn, SinkRestore:
		return false
	case SinkCommitTxn:
		return !cfg.flags.nonotify
	}
	return true
}

// sinkActionNames are the operators the actions instantiate, by
// SinkActionKind.
var sinkActionNames = [...]string{SinkEmit: "EmitS", SinkInject: "InjectS", SinkProcess: "ProcessS",
	SinkRecvBarrier: "RecvBarrierSV", SinkCompleteCkpt: "CompleteCkpt", SinkCommitTxn: "Commit",
	SinkStoreAbortTxn: "StoreAbort", SinkReportLossTxn: "ReportLossV", SinkRestore: "RestoreSV"}

// Label renders the instance as TLC prints it in a trace, e.g.
// RecvBarrierSV(<<"S1", "K">>,FALSE).
func (a SinkAction) Label(cfg *SinkConfig) string {
	return call(sinkActionNames[a.Kind], a.args(cfg), ",")
}

// args are the instance's parameters' values: the node, edge or
// transaction it names, then the variant's flags it passes.
func (a SinkAction) args(cfg *SinkConfig) []string {
	f := cfg.flags
	switch a.Kind {
	case SinkEmit, SinkInject:
		return []string{fmt.Sprintf("%q", cfg.Base.Nodes[a.Node])}
	case SinkProcess:
		return []string{cfg.Base.EdgeName(a.Edge)}
	case SinkRecvBarrier:
		return []string{cfg.Base.EdgeName(a.Edge), tlaBool(f.arrival)}
	case SinkCommitTxn, SinkStoreAbortTxn:
		return []string{fmt.Sprint(a.Txn)}
	case SinkReportLossTxn:
		return []string{fmt.Sprint(a.Txn), tlaBool(f.silent)}
	case SinkRestore:
		return []string{tlaBool(f.noabort), tlaBool(f.forget), tlaBool(f.silent)}
	}
	return nil
}
