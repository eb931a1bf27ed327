package barrier

import (
	"fmt"
	"slices"

	"github.com/markerwave/markerwave/model/engine"
	"github.com/markerwave/markerwave/spec"
)

// The properties of tla/BarrierSink.tla (lines 290-324) and its search.
//
// # Liveness without a tableau
//
// CompleteCommitted (\A i : Pending(i) ~> Settled(i), line 324) is checked
// as BarriersComplete is (doc.go):
//
//  1. Every action strictly decreases sinkMeasure in the lexicographic
//     order: RestoreSV the restores left; CompleteCkpt the checkpoints
//     left (2 * MaxCkpt + 1 - ckpt - done); StoreAbort the aborts left;
//     the actions of tla/BarrierSnapshots.tla their progressMeasure
//     (RestoreSV and CompleteCkpt re-arm the recording, earlier
//     components); Commit and ReportLossV the pending transactions. So
//     every behaviour ends stuttering in a final state F, and a behaviour
//     stuttering in F is fair iff no action FairnessS makes weakly fair
//     is enabled in F.
//  2. A pending transaction stays pending until it is settled, and a
//     settled one stays settled: the explorer asserts both on every
//     transition when it checks the property (a broken variant need not
//     keep it: SpecSinkForget aborts a pending transaction).
//
// So the property holds iff no reachable state with no fair action
// enabled has a pending transaction.

// SinkInvariant is a state invariant of tla/BarrierSink.tla.
type SinkInvariant func(cfg *SinkConfig, st *SinkState) bool

var sinkInvariantFuncs = map[spec.Property]SinkInvariant{
	spec.PropSinkTypeOK:            SinkTypeOK,
	spec.PropNoDuplicateOutput:     NoDuplicateOutput,
	spec.PropExactlyOnceOutput:     ExactlyOnceOutput,
	spec.PropCommittedOnlyComplete: CommittedOnlyComplete,
}

// SinkInvariantByName returns the invariant p names.
func SinkInvariantByName(p spec.Property) (SinkInvariant, bool) {
	f, ok := sinkInvariantFuncs[p]
	return f, ok
}

// SinkTypeOK mirrors SinkTypeOK (lines 293-302); the Go types give the
// functions' domains and the naturals.
func SinkTypeOK(cfg *SinkConfig, st *SinkState) bool {
	return sinkCountersOK(cfg, st) && snapQOK(cfg, st.Snap) && txnsOK(cfg, st)
}

// sinkCountersOK: ckpt, done, restores, aborts and reportedLoss in their
// ranges (lines 294, 301-302).
func sinkCountersOK(cfg *SinkConfig, st *SinkState) bool {
	return st.Ckpt >= 1 && st.Ckpt <= cfg.MaxCkpt+1 && st.Done <= cfg.MaxCkpt && st.Done < st.Ckpt &&
		st.Restores <= cfg.MaxRestores && st.Aborts <= cfg.MaxAborts &&
		st.ReportedLoss&^(uint64(1)<<(st.Done+1)-2) == 0
}

// snapQOK: snap.q holds records only (line 296).
func snapQOK(cfg *SinkConfig, sn Snap) bool {
	return !slices.ContainsFunc(sn.Q, func(q []Item) bool {
		return slices.ContainsFunc(q, func(it Item) bool { return !cfg.Base.itemOK(it) || it.Barrier })
	})
}

// txnsOK: 1..MaxTxn transactions in Txn, the last open (lines 298-299).
func txnsOK(cfg *SinkConfig, st *SinkState) bool {
	all := uint64(1)<<cfg.Base.numKeys - 1
	return len(st.Txns) >= 1 && len(st.Txns) <= cfg.MaxTxn() && st.Txns[st.last()].St == spec.TxnOpen &&
		!slices.ContainsFunc(st.Txns, func(t Txn) bool { return t.Ck > cfg.MaxCkpt || t.Recs&^all != 0 })
}

// lostKeys mirrors LostKeys (line 305).
func (st *SinkState) lostKeys() uint64 {
	var r uint64
	for _, t := range st.Txns {
		if st.ReportedLoss&(1<<t.Ck) != 0 {
			r |= t.Recs
		}
	}
	return r
}

// NoDuplicateOutput mirrors NoDuplicateOutput (line 308).
func NoDuplicateOutput(_ *SinkConfig, st *SinkState) bool {
	return !slices.ContainsFunc(st.Store, func(n int) bool { return n > 1 })
}

// ExactlyOnceOutput mirrors ExactlyOnceOutput (lines 313-316).
func ExactlyOnceOutput(cfg *SinkConfig, st *SinkState) bool {
	if !NoDuplicateOutput(cfg, st) {
		return false
	}
	if st.pendingCount() > 0 {
		return true
	}
	lost := st.lostKeys()
	for k, n := range st.Store {
		if want := st.Snap.Out[k] > 0 && lost&(1<<k) == 0; n != b2i(want) {
			return false
		}
	}
	return true
}

// b2i is 1 for TRUE, 0 for FALSE.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CommittedOnlyComplete mirrors CommittedOnlyComplete (lines 319-320).
func CommittedOnlyComplete(_ *SinkConfig, st *SinkState) bool {
	return !slices.ContainsFunc(st.Txns, func(t Txn) bool { return t.St == spec.TxnCommitted && !st.ofComplete(t) })
}

// sinkMeasure is the progress measure of the liveness argument above.
type sinkMeasure [8]int

func sinkProgress(cfg *SinkConfig, st *SinkState) sinkMeasure {
	base := progressMeasure(cfg.Base, st.B)
	m := sinkMeasure{cfg.MaxRestores - st.Restores, 2*cfg.MaxCkpt + 1 - st.Ckpt - st.Done, cfg.MaxAborts - st.Aborts}
	copy(m[3:], base[:])
	m[7] = st.pendingCount()
	return m
}

func (a sinkMeasure) less(b sinkMeasure) bool { return slices.Compare(a[:], b[:]) < 0 }

// sinkLiveViolated: st is the final state of a fair behaviour (no fair
// action enabled) with a pending transaction.
func sinkLiveViolated(cfg *SinkConfig, st *SinkState) bool {
	for _, a := range cfg.Actions() {
		if _, k := sinkStep(cfg, st, a); a.fair(cfg) && k == Enabled {
			return false
		}
	}
	return st.pendingCount() > 0
}

// checkLiveStep asserts the argument's two facts on the transition from
// st to ns by a.
func checkLiveStep(cfg *SinkConfig, st, ns *SinkState, a SinkAction) error {
	if !sinkProgress(cfg, ns).less(sinkProgress(cfg, st)) {
		return fmt.Errorf("barrier: %s does not decrease the progress measure; the liveness argument does not apply", a.Label(cfg))
	}
	if i := unsettled(st, ns); i != 0 {
		return fmt.Errorf("barrier: %s unsettles transaction %d; the liveness argument does not apply", a.Label(cfg), i)
	}
	return nil
}

// unsettled is a transaction pending in st that is neither pending nor
// settled in ns, or settled in st and not in ns; 0 if none.
func unsettled(st, ns *SinkState) int {
	for i := 1; i <= len(st.Txns); i++ {
		if st.pending(i) && !ns.pending(i) && !ns.settled(i) || st.settled(i) && !ns.settled(i) {
			return i
		}
	}
	return 0
}

// SinkTraceStep is one state of a counterexample and the action that led
// to it (Label "" and Action nil for the initial state).
type SinkTraceStep struct {
	Label  string
	Action *SinkAction
	State  *SinkState
}

// SinkViolation is a property that fails, with its shortest
// counterexample.
type SinkViolation struct {
	Kind     string
	Property spec.Property
	Trace    []SinkTraceStep
	Stutter  bool
}

// SinkResult is what SinkExplore found, counted as TLC counts.
type SinkResult struct {
	engine.Counts
	Violation *SinkViolation
}

// SinkExplore searches cfg's state graph with the shared engine, checking
// cfg.Invariants in every state, in order, and CompleteCommitted, when
// cfg.Properties names it, by the argument above.
func SinkExplore(cfg *SinkConfig, opt engine.Options) (*SinkResult, error) {
	sp := &sinkSearch{cfg: cfg, checkLive: slices.Contains(cfg.Properties, spec.PropCompleteCommitted)}
	for _, p := range cfg.Invariants {
		sp.invs = append(sp.invs, sinkInvariantFuncs[p])
	}
	r, err := engine.Run(sp, opt)
	if err != nil {
		return nil, err
	}
	res := &SinkResult{Counts: r.Counts}
	if ev := r.Violation; ev != nil {
		tr, err := rebuildSinkTrace(cfg, ev.Path)
		if err != nil {
			return nil, err
		}
		res.Violation = &SinkViolation{Kind: ev.Kind, Property: ev.Property, Trace: tr, Stutter: ev.Kind == engine.KindProperty}
	}
	return res, nil
}

// sinkSearch is cfg's state graph as the engine sees it.
type sinkSearch struct {
	cfg       *SinkConfig
	invs      []SinkInvariant
	checkLive bool
}

func (sp *sinkSearch) Init() ([][]byte, error) {
	return [][]byte{SinkAppendEncode(nil, SinkInit(sp.cfg))}, nil
}

func (sp *sinkSearch) CheckDeadlock() bool { return sp.cfg.CheckDeadlock }

func (sp *sinkSearch) NewExpander() engine.Expander { return &sinkExpander{sinkSearch: sp} }

type sinkExpander struct {
	*sinkSearch
	buf []byte
}

// Expand decodes enc, checks the invariants and the liveness condition,
// and emits the successors in NextS's order.
func (x *sinkExpander) Expand(enc []byte, emit func([]byte)) (engine.Verdict, error) {
	var v engine.Verdict
	cfg := x.cfg
	st, err := SinkDecode(cfg, enc)
	if err != nil {
		return v, err
	}
	v.Invariant = x.violated(st)
	if x.checkLive && sinkLiveViolated(cfg, st) {
		v.Live = spec.PropCompleteCommitted
	}
	for _, s := range SinkNext(cfg, st) {
		if x.checkLive {
			if err := checkLiveStep(cfg, st, s.State, s.Action); err != nil {
				return v, err
			}
		}
		x.buf = SinkAppendEncode(x.buf[:0], s.State)
		emit(x.buf)
	}
	return v, nil
}

// violated is the first of the invariants st violates, or "".
func (x *sinkExpander) violated(st *SinkState) spec.Property {
	for i, f := range x.invs {
		if !f(x.cfg, st) {
			return x.cfg.Invariants[i]
		}
	}
	return ""
}

// rebuildSinkTrace rebuilds a counterexample's steps from its path of
// encodings.
func rebuildSinkTrace(cfg *SinkConfig, path [][]byte) ([]SinkTraceStep, error) {
	states, actions, err := engine.RebuildPath(path,
		func(enc []byte) (*SinkState, error) { return SinkDecode(cfg, enc) },
		func(from *SinkState, yield func(SinkAction, string)) {
			for _, s := range SinkNext(cfg, from) {
				yield(s.Action, SinkKey(s.State))
			}
		})
	if err != nil {
		return nil, fmt.Errorf("barrier: %w", err)
	}
	tr := []SinkTraceStep{{State: states[0]}}
	for k, a := range actions {
		tr = append(tr, SinkTraceStep{Label: a.Label(cfg), Action: &a, State: states[k+1]})
	}
	return tr, nil
}
