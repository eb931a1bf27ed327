package barrier

import (
	"encoding/binary"
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// This file and sink_*.go mirror tla/BarrierSink.tla: a two-phase-commit
// sink writing the dataflow's output into an external store, over the
// barrier snapshots of tla/BarrierSnapshots.tla and a sequence of
// checkpoints. Line numbers refer to tla/BarrierSink.tla.

// SinkModule is the spec module of the two-phase-commit sink.
const SinkModule = "BarrierSink"

// IsSinkModule reports whether mod is tla/BarrierSink.tla: a TLC model
// extending it is LoadSink's.
func IsSinkModule(mod string) bool { return mod == SinkModule }

// SinkVariant is the specification a sink model checks (lines 274-287).
type SinkVariant string

// The specifications of tla/BarrierSink.tla.
const (
	SinkSpec         SinkVariant = "SpecSink"         // line 274
	SinkSpecArrival  SinkVariant = "SpecSinkArrival"  // line 276: commit at barrier arrival
	SinkSpecNoAbort  SinkVariant = "SpecSinkNoAbort"  // line 278: no abort on restore
	SinkSpecForget   SinkVariant = "SpecSinkForget"   // line 280: a complete checkpoint's transaction aborted on restore
	SinkSpecSilent   SinkVariant = "SpecSinkSilent"   // line 282: a store-aborted transaction taken for committed
	SinkSpecNoNotify SinkVariant = "SpecSinkNoNotify" // line 286: no fairness on Commit (the notification need not arrive)
)

// sinkFlags are the arguments the variant passes to NextS (line 250):
// arrival, noabort, forget, silent; and nonotify: FairnessG without
// Commit's fairness (lines 286-287) instead of FairnessS.
type sinkFlags struct{ arrival, noabort, forget, silent, nonotify bool }

func (v SinkVariant) flags() (sinkFlags, bool) {
	f := sinkFlags{arrival: v == SinkSpecArrival, noabort: v == SinkSpecNoAbort,
		forget: v == SinkSpecForget, silent: v == SinkSpecSilent, nonotify: v == SinkSpecNoNotify}
	return f, v == SinkSpec || f != sinkFlags{}
}

// SinkConfig is a model of tla/BarrierSink.tla: the graph's constants
// (Base, whose actions the sink's wrap, with InjectV(s, TRUE),
// ProcessV(e, TRUE, TRUE) and RecvBarrierV(e, TRUE, TRUE)), the three
// bounds (lines 59-62), the specification and the properties.
type SinkConfig struct {
	Base                            *Config
	MaxCkpt, MaxRestores, MaxAborts int
	Variant                         SinkVariant
	Invariants, Properties          []spec.Property
	CheckDeadlock                   bool
	flags                           sinkFlags
}

// MaxTxn mirrors MaxTxn (line 73): the transactions a behaviour opens at
// most.
func (cfg *SinkConfig) MaxTxn() int { return 1 + cfg.MaxCkpt + cfg.MaxRestores }

// Txn mirrors a transaction of txns (Txn, line 68): the checkpoint it was
// pre-committed for (0 while open), its status, and its records as a
// set of Key indexes (bit k: the k-th key, Config's order).
type Txn struct {
	Ck   int
	St   spec.TxnStatus
	Recs uint64
}

// openTxn mirrors OpenTxn (line 69).
var openTxn = Txn{St: spec.TxnOpen}

// txnStatuses is TxnStatus (line 67), in its order: a status's encoding
// is its index.
var txnStatuses = []spec.TxnStatus{spec.TxnOpen, spec.TxnPreCommitted, spec.TxnCommitted, spec.TxnAborted, spec.TxnTimedOut}

// Snap mirrors snap's records (InitSnap and RecordedSnap, lines 90-94):
// the state a complete checkpoint holds, indexed as State's fields.
type Snap struct {
	Off, Cnt, Out []int
	Q             [][]Item
	Sent, Rcvd    []int
}

func (s Snap) clone() Snap {
	return Snap{Off: slices.Clone(s.Off), Cnt: slices.Clone(s.Cnt), Out: slices.Clone(s.Out),
		Q: cloneQ(s.Q), Sent: slices.Clone(s.Sent), Rcvd: slices.Clone(s.Rcvd)}
}

// SinkState mirrors the variables of tla/BarrierSink.tla: those of
// tla/BarrierSnapshots.tla (B) and the sink's (lines 75-83).
// ReportedLoss is a set of checkpoints (bit c: checkpoint c).
type SinkState struct {
	B            *State
	Ckpt, Done   int
	Snap         Snap
	Txns         []Txn
	Store        []int
	Restores     int
	Aborts       int
	ReportedLoss uint64
}

// withBase is a copy of st's sink variables over the base state b.
func (st *SinkState) withBase(b *State) *SinkState {
	return &SinkState{B: b, Ckpt: st.Ckpt, Done: st.Done, Snap: st.Snap.clone(),
		Txns: slices.Clone(st.Txns), Store: slices.Clone(st.Store), Restores: st.Restores,
		Aborts: st.Aborts, ReportedLoss: st.ReportedLoss}
}

// Clone returns a deep copy of st.
func (st *SinkState) Clone() *SinkState { return st.withBase(st.B.Clone()) }

// last mirrors Last (line 96): the open transaction's index in Txns
// (from 0: txns[Last] is Txns[last()]).
func (st *SinkState) last() int { return len(st.Txns) - 1 }

// ofComplete mirrors OfComplete(t) (line 97).
func (st *SinkState) ofComplete(t Txn) bool { return t.Ck != 0 && t.Ck <= st.Done }

// pending mirrors Pending(i) (lines 98-100), i from 1.
func (st *SinkState) pending(i int) bool {
	if i < 1 || i > len(st.Txns) {
		return false
	}
	t := st.Txns[i-1]
	return (t.St == spec.TxnPreCommitted || t.St == spec.TxnTimedOut) && st.ofComplete(t)
}

// pendingCount is how many i satisfy Pending(i).
func (st *SinkState) pendingCount() int {
	n := 0
	for i := 1; i <= len(st.Txns); i++ {
		n += b2i(st.pending(i))
	}
	return n
}

// settled mirrors Settled(i) (line 101).
func (st *SinkState) settled(i int) bool {
	if i < 1 || i > len(st.Txns) {
		return false
	}
	t := st.Txns[i-1]
	return t.St == spec.TxnCommitted || st.ReportedLoss&(1<<t.Ck) != 0
}

// add mirrors Add(store, R) (line 104): every record of the set R once
// more.
func add(store []int, r uint64) {
	for k := range store {
		if r&(1<<k) != 0 {
			store[k]++
		}
	}
}

// rearm mirrors Rearm (lines 108-111) on the successor b.
func rearm(cfg *Config, b *State) {
	b.Recorded = 0
	b.Bar = make([]uint64, len(cfg.Nodes))
	b.RecChan = make([]Status, len(cfg.Edges))
	b.RecQ = make([][]Item, len(cfg.Edges))
}

// SinkInit mirrors InitS (lines 114-123).
func SinkInit(cfg *SinkConfig) *SinkState {
	b := Init(cfg.Base)
	n, e, k := len(cfg.Base.Nodes), len(cfg.Base.Edges), cfg.Base.numKeys
	return &SinkState{B: b, Ckpt: 1,
		Snap: Snap{Off: make([]int, n), Cnt: make([]int, n), Out: make([]int, k),
			Q: make([][]Item, e), Sent: make([]int, e), Rcvd: make([]int, e)},
		Txns: []Txn{openTxn}, Store: make([]int, k)}
}

// Encoding: the sink's variables, then the base state (AppendEncode);
// two states are equal iff their encodings are.

// SinkAppendEncode appends the canonical encoding of st to b.
func SinkAppendEncode(b []byte, st *SinkState) []byte {
	for _, x := range []int{st.Ckpt, st.Done, st.Restores, st.Aborts} {
		b = binary.AppendUvarint(b, uint64(x))
	}
	b = binary.AppendUvarint(b, st.ReportedLoss)
	b = appendInts(b, st.Snap.Off)
	b = appendInts(b, st.Snap.Cnt)
	b = appendInts(b, st.Snap.Out)
	b = appendItems(b, st.Snap.Q)
	b = appendInts(b, st.Snap.Sent)
	b = appendInts(b, st.Snap.Rcvd)
	b = appendInts(b, st.Store)
	b = binary.AppendUvarint(b, uint64(len(st.Txns)))
	for _, t := range st.Txns {
		b = binary.AppendUvarint(b, uint64(t.Ck))
		b = append(b, byte(slices.Index(txnStatuses, t.St)))
		b = binary.AppendUvarint(b, t.Recs)
	}
	return AppendEncode(b, st.B)
}

// SinkKey is the canonical encoding of st as a string.
func SinkKey(st *SinkState) string { return string(SinkAppendEncode(nil, st)) }

// SinkDecode is the inverse of SinkAppendEncode for cfg's states.
func SinkDecode(cfg *SinkConfig, b []byte) (*SinkState, error) {
	n, e, k := len(cfg.Base.Nodes), len(cfg.Base.Edges), cfg.Base.numKeys
	d := &decoder{b: b}
	st := &SinkState{}
	x := d.ints(4)
	st.Ckpt, st.Done, st.Restores, st.Aborts = x[0], x[1], x[2], x[3]
	st.ReportedLoss = d.uint()
	st.Snap = Snap{Off: d.ints(n), Cnt: d.ints(n), Out: d.ints(k), Q: d.items(e), Sent: d.ints(e), Rcvd: d.ints(e)}
	st.Store = d.ints(k)
	l := int(d.uint())
	if d.err != nil || l > len(d.b) {
		return nil, errCorrupt
	}
	st.Txns = make([]Txn, l)
	for i := range st.Txns {
		ck := int(d.uint())
		s := int(d.byte())
		if s >= len(txnStatuses) {
			return nil, errCorrupt
		}
		st.Txns[i] = Txn{Ck: ck, St: txnStatuses[s], Recs: d.uint()}
	}
	if d.err != nil {
		return nil, d.err
	}
	base, err := Decode(cfg.Base, d.b)
	if err != nil {
		return nil, err
	}
	st.B = base
	return st, nil
}
