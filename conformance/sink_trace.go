package conformance

import (
	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/spec"
)

// SinkTraceOf is the sink trace of a behaviour of cfg's model (a
// counterexample SinkExplore found, say): the sink's part of each step,
// as an implementation of the variant would write it. A pre-commit that
// commits at once (SpecSinkArrival) is a PreCommit and a Commit; a
// silent loss (SpecSinkSilent) a Commit; a restore its Restore and one
// settling step per transaction it changes (settleAction). The graph's
// own steps (EmitS, InjectS, ProcessS, a RecvBarrierSV where the sink
// does not record) leave nothing.
func SinkTraceOf(cfg *barrier.SinkConfig, steps []barrier.SinkTraceStep) *spec.SinkTrace {
	tr := &spec.SinkTrace{Header: spec.SinkHeader{Format: spec.SinkTraceFormat,
		MaxCkpt: cfg.MaxCkpt, MaxRestores: cfg.MaxRestores, MaxAborts: cfg.MaxAborts}}
	for i := 1; i < len(steps); i++ {
		if a := steps[i].Action; a != nil {
			tr.Events = append(tr.Events, sinkEventsOf(cfg, *a, steps[i-1].State, steps[i].State)...)
		}
	}
	return tr
}

// sinkEventsOf is the sink's part of step a from st to ns.
func sinkEventsOf(cfg *barrier.SinkConfig, a barrier.SinkAction, st, ns *barrier.SinkState) []spec.SinkEvent {
	txn := func(action string, i int) spec.SinkEvent {
		t := ns.Txns[i-1]
		return spec.SinkEvent{Action: action, Txn: &spec.SinkTxn{Txn: i, Ckpt: t.Ck, Recs: cfg.Records(t.Recs)}}
	}
	switch a.Kind {
	case barrier.SinkRecvBarrier:
		return preCommitOf(len(st.Txns), ns, txn)
	case barrier.SinkCompleteCkpt:
		return []spec.SinkEvent{{Action: spec.SinkComplete, Ckpt: ns.Done}}
	case barrier.SinkCommitTxn:
		return []spec.SinkEvent{txn(spec.SinkCommit, a.Txn)}
	case barrier.SinkStoreAbortTxn:
		return []spec.SinkEvent{txn(spec.SinkStoreAbort, a.Txn)}
	case barrier.SinkReportLossTxn:
		return []spec.SinkEvent{txn(settleAction(st.Txns[a.Txn-1], ns.Txns[a.Txn-1], st.Done), a.Txn)}
	case barrier.SinkRestore:
		return restoreOf(st, ns, txn)
	}
	return nil
}

// restoreOf is a restore's Restore and its settling steps.
func restoreOf(st, ns *barrier.SinkState, txn func(string, int) spec.SinkEvent) []spec.SinkEvent {
	evs := []spec.SinkEvent{{Action: spec.SinkRestore, Ckpt: ns.Ckpt}}
	for i, t := range st.Txns {
		if s := settleAction(t, ns.Txns[i], st.Done); s != "" {
			evs = append(evs, txn(s, i+1))
		}
	}
	return evs
}

// preCommitOf is the sink's recording, if RecvBarrierSV made it record
// (a transaction opened after open, the former open one): its PreCommit,
// and its Commit if it committed at once.
func preCommitOf(open int, ns *barrier.SinkState, txn func(string, int) spec.SinkEvent) []spec.SinkEvent {
	if len(ns.Txns) == open {
		return nil
	}
	pre := txn(spec.SinkPreCommit, open)
	pre.Ckpt = pre.Txn.Ckpt
	if ns.Txns[open-1].St == spec.TxnCommitted {
		return []spec.SinkEvent{pre, txn(spec.SinkCommit, open)}
	}
	return []spec.SinkEvent{pre}
}
