package model

import (
	"github.com/markerwave/markerwave/spec"
)

// This file mirrors the properties of tla/ChandyLamport.tla (lines
// 262-347). Each invariant is a func(*Config, *State) bool with the TLA+
// name.

// Invariant is a state predicate.
type Invariant func(cfg *Config, st *State) bool

var invariantFuncs = map[spec.Property]Invariant{
	spec.PropTypeOK:               TypeOK,
	spec.PropConsistentCut:        ConsistentCut,
	spec.PropExactChannelState:    ExactChannelState,
	spec.PropConservation:         Conservation,
	spec.PropSnapshotReachable:    SnapshotReachable,
	spec.PropCurrentReachable:     CurrentReachable,
	spec.PropChandyLamportTheorem: ChandyLamportTheorem,
	spec.PropStableCatalogue:      StableCatalogue,

	// tla/ChandyLamportFaults.tla (model/faults.go)
	spec.PropFaultTypeOK:           FaultTypeOK,
	spec.PropMoneyConserved:        MoneyConserved,
	spec.PropExactlyOnce:           ExactlyOnce,
	spec.PropTheoremUnlessAborted:  TheoremUnlessAborted,
	spec.PropAbortSound:            AbortSound,
	spec.PropRecoveredFromComplete: RecoveredFromComplete,
	spec.PropRecoveryReachable:     RecoveryReachable,
}

// InvariantByName returns the invariant with that TLA+ name.
func InvariantByName(name spec.Property) (Invariant, bool) {
	f, ok := invariantFuncs[name]
	return f, ok
}

func knownInvariants() string { return spec.JoinProperties(spec.StateInvariants) }

func natLocal(l spec.LocalState) bool { return l.Bal >= 0 && l.Sent >= 0 && l.Rcvd >= 0 }

// TypeOK mirrors TypeOK (lines 267-281), conjunct by conjunct: the
// variables' shapes (the function domains), then each variable's values.
func TypeOK(cfg *Config, st *State) bool {
	return shapeOK(cfg, st) &&
		allLocal(st.Proc) && // proc \in [Proc -> LocalState]
		chansOK(cfg, st.Chan) &&
		// nSent \in [Chan -> Nat] holds by construction (uint64).
		cfg.allSeqsNonzero(st.Got) && // got \in [Chan -> Seq(Nat \ {0})]
		snapsOK(cfg, st)
}

// shapeOK: every variable is a function on its domain (Proc, Chan, Snap).
func shapeOK(cfg *Config, st *State) bool {
	nc, ns := cfg.NumChans(), cfg.NumSnaps()
	return len(st.Proc) == cfg.NumProcs() && len(st.Chan) == nc && len(st.NSent) == nc && len(st.Got) == nc &&
		allLen(ns, len(st.Recorded), len(st.RecProc), len(st.RecChan), len(st.RecMsgs),
			len(st.CutSent), len(st.CutGot), len(st.Pre), len(st.Post))
}

// allLen reports whether every length ls is n.
func allLen(n int, ls ...int) bool {
	for _, l := range ls {
		if l != n {
			return false
		}
	}
	return true
}

// allLocal: every local state is a LocalState (natural counts).
func allLocal(ls []spec.LocalState) bool {
	for _, l := range ls {
		if !natLocal(l) {
			return false
		}
	}
	return true
}

// chansOK: every message on a channel is an app message of an Amount
// with a positive seq, or a marker of a snapshot (lines 269-271).
func chansOK(cfg *Config, chans [][]Msg) bool {
	for _, ms := range chans {
		for _, m := range ms {
			if !cfg.msgOK(m) {
				return false
			}
		}
	}
	return true
}

// msgOK is m \in [kind : {"app"}, amt : Amount, seq : Nat \ {0}] \cup
// [kind : {"marker"}, snap : Snap].
func (cfg *Config) msgOK(m Msg) bool {
	switch m.Kind {
	case KindApp:
		return cfg.isAmount(m.Amt) && m.Seq != 0
	case KindMarker:
		return m.Snap >= 0 && m.Snap < cfg.NumSnaps()
	}
	return false
}

// allSeqsNonzero: every sequence is a Seq(Nat \ {0}).
func (cfg *Config) allSeqsNonzero(gs [][]uint64) bool {
	for _, g := range gs {
		if !cfg.allNonzero(g) {
			return false
		}
	}
	return true
}

// snapsOK: each snapshot's variables (lines 274-281).
func snapsOK(cfg *Config, st *State) bool {
	full := allProcs(cfg)
	for s := 0; s < cfg.NumSnaps(); s++ {
		if !st.Recorded[s].Minus(full).Empty() || // recorded \in [Snap -> SUBSET Proc]
			!snapShapeOK(cfg, st, s) ||
			!allLocal(st.RecProc[s]) || // recProc \in [Snap -> [Proc -> LocalState]]
			!statusesOK(st.RecChan[s]) || // recChan \in [Snap -> [Chan -> Status]]
			// recMsgs holds app messages only, by construction.
			!cfg.allSeqsNonzero(st.CutGot[s]) || // cutGot \in [Snap -> [Chan -> Seq(Nat \ {0})]]
			!shadowOK(cfg, st.Pre[s]) || !shadowOK(cfg, st.Post[s]) { // pre, post \in [Snap -> Shadow]
			return false
		}
	}
	return true
}

// snapShapeOK: snapshot s's functions are on Proc and Chan.
func snapShapeOK(cfg *Config, st *State, s int) bool {
	return len(st.RecProc[s]) == cfg.NumProcs() &&
		allLen(cfg.NumChans(), len(st.RecChan[s]), len(st.RecMsgs[s]), len(st.CutSent[s]), len(st.CutGot[s]))
}

// statusesOK: every status is a Status.
func statusesOK(xs []Status) bool {
	for _, x := range xs {
		if x > Done {
			return false
		}
	}
	return true
}

// shadowOK is sh \in Shadow (line 66).
func shadowOK(cfg *Config, sh Shadow) bool {
	if len(sh.Proc) != cfg.NumProcs() || len(sh.Chan) != cfg.NumChans() {
		return false
	}
	for _, l := range sh.Proc {
		if !natLocal(l) {
			return false
		}
	}
	for _, ms := range sh.Chan {
		for _, m := range ms {
			if !cfg.isAmount(m.Amt) {
				return false
			}
		}
	}
	return true
}

// ConsistentCut mirrors ConsistentCut (lines 287-292): once both ends of c
// have recorded for s, the messages the receiver had consumed when it
// recorded are 1..k with k <= the number the sender had sent.
func ConsistentCut(cfg *Config, st *State) bool {
	for s := range cfg.Snap {
		for c := range cfg.Topo.Chans {
			if !(st.Recorded[s].Has(cfg.from[c]) && st.Recorded[s].Has(cfg.to[c])) {
				continue
			}
			g := st.CutGot[s][c]
			if uint64(len(g)) > st.CutSent[s][c] || !cfg.countsFromOne(g) {
				return false
			}
		}
	}
	return true
}

// ExactChannelState mirrors ExactChannelState (lines 297-302): a done
// channel's recorded messages are numbers k+1 .. cutSent[s][c], in order.
func ExactChannelState(cfg *Config, st *State) bool {
	for s := range cfg.Snap {
		for c := range cfg.Topo.Chans {
			if st.RecChan[s][c] != Done {
				continue
			}
			k := int64(len(st.CutGot[s][c]))
			rec := st.RecMsgs[s][c]
			want := int64(st.CutSent[s][c]) - k // 1..(cutSent - k) is empty when negative
			if want < 0 {
				want = 0
			}
			if int64(len(rec)) != want {
				return false
			}
			for j, m := range rec {
				if int64(m.Seq) != k+int64(j)+1 {
					return false
				}
			}
		}
	}
	return true
}

// Conservation mirrors Conservation (lines 306-309): a complete snapshot
// holds all the money.
func Conservation(cfg *Config, st *State) bool {
	for s := range cfg.Snap {
		if !Complete(cfg, st, s) {
			continue
		}
		var sum int64
		for _, l := range st.RecProc[s] {
			sum += l.Bal
		}
		for _, ms := range st.RecMsgs[s] {
			for _, m := range ms { // SeqSum (lines 90-91)
				sum += m.Amt
			}
		}
		if sum != cfg.totalMoney {
			return false
		}
	}
	return true
}

// RecordedApp mirrors RecordedApp(s) (line 105): the state snapshot s
// recorded, as a Shadow with ok TRUE.
func RecordedApp(st *State, s int) Shadow {
	return Shadow{OK: true, Proc: st.RecProc[s], Chan: st.RecMsgs[s]}
}

// CurrentApp mirrors CurrentApp (line 104): the application state now,
// every channel reduced to its app messages (AppOnly, line 98).
func CurrentApp(st *State) Shadow {
	ch := make([][]spec.AppMsg, len(st.Chan))
	for c, ms := range st.Chan {
		for _, m := range ms {
			if m.Kind == KindApp {
				ch[c] = append(ch[c], m.AppMsg)
			}
		}
	}
	return Shadow{OK: true, Proc: st.Proc, Chan: ch}
}

// SnapshotReachable mirrors SnapshotReachable (lines 317-319).
func SnapshotReachable(cfg *Config, st *State) bool {
	for s := range cfg.Snap {
		if !st.Pre[s].OK {
			return false
		}
		if Complete(cfg, st, s) && !st.Pre[s].Equal(RecordedApp(st, s)) {
			return false
		}
	}
	return true
}

// CurrentReachable mirrors CurrentReachable (lines 321-323).
func CurrentReachable(cfg *Config, st *State) bool {
	var cur *Shadow
	for s := range cfg.Snap {
		if !st.Post[s].OK {
			return false
		}
		if Complete(cfg, st, s) {
			if cur == nil {
				c := CurrentApp(st)
				cur = &c
			}
			if !st.Post[s].Equal(*cur) {
				return false
			}
		}
	}
	return true
}

// ChandyLamportTheorem mirrors ChandyLamportTheorem == SnapshotReachable
// /\ CurrentReachable (line 325).
func ChandyLamportTheorem(cfg *Config, st *State) bool {
	return SnapshotReachable(cfg, st) && CurrentReachable(cfg, st)
}

// Terminated mirrors Terminated(st) (lines 334-335) on an application
// state: every budget spent, no transfer in flight.
func Terminated(cfg *Config, sh Shadow) bool {
	for p, l := range sh.Proc {
		if l.Sent != cfg.Budget[p] {
			return false
		}
	}
	for _, ms := range sh.Chan {
		if len(ms) != 0 {
			return false
		}
	}
	return true
}

// RcvdAtLeast mirrors RcvdAtLeast(st, p, k) == st.proc[p].rcvd >= k (line
// 337); p is a process index.
func RcvdAtLeast(sh Shadow, p, k int) bool { return sh.Proc[p].Rcvd >= k }

// Conserved mirrors Conserved(st) (lines 339-340): balances plus amounts
// in flight equal TotalMoney.
func Conserved(cfg *Config, sh Shadow) bool {
	var sum int64
	for _, l := range sh.Proc {
		sum += l.Bal
	}
	for _, ms := range sh.Chan {
		for _, m := range ms {
			sum += m.Amt
		}
	}
	return sum == cfg.totalMoney
}

// StableCatalogue mirrors StableCatalogue (lines 344-353): in every
// complete snapshot, each catalogued stable predicate that holds in the
// recorded state holds now, and each that fails there failed initially.
// The catalogue is spec.StableCatalogue(Proc, MaxRcvd). The quantifier
// \A k \in 1..MaxRcvd over RcvdAtLeast(x, p, k) => RcvdAtLeast(y, p, k) is
// decided at once (it fails iff some k with y < k <= min(x, MaxRcvd)
// exists), so long traces cost no more than short ones; the model tests
// check it against the literal quantification.
func StableCatalogue(cfg *Config, st *State) bool {
	var cur, init Shadow
	ready := false
	for s := range cfg.Snap {
		if !Complete(cfg, st, s) {
			continue
		}
		if !ready {
			cur, init, ready = CurrentApp(st), InitApp(cfg), true
		}
		if !stableFrom(cfg, RecordedApp(st, s), cur, init) {
			return false
		}
	}
	return true
}

// stableFrom checks the catalogue for one snapshot's recorded state rec,
// the current state cur and the initial one: each predicate that holds
// in rec holds in cur, each that fails in rec failed in init.
func stableFrom(cfg *Config, rec, cur, init Shadow) bool {
	return implied(Terminated(cfg, rec), Terminated(cfg, cur), Terminated(cfg, init)) &&
		implied(Conserved(cfg, rec), Conserved(cfg, cur), Conserved(cfg, init)) &&
		rcvdStable(cfg, rec, cur, init)
}

// implied is (rec => cur) /\ (~rec => ~init): a predicate's stability
// from a recorded state.
func implied(rec, cur, init bool) bool { return (!rec || cur) && (rec || !init) }

// rcvdStable checks RcvdAtLeast(p, k) for every p and k \in 1..MaxRcvd.
func rcvdStable(cfg *Config, rec, cur, init Shadow) bool {
	for p := range cfg.Topo.Procs {
		if rcvdGap(cfg, rec.Proc[p].Rcvd, cur.Proc[p].Rcvd) || rcvdGap(cfg, init.Proc[p].Rcvd, rec.Proc[p].Rcvd) {
			return false
		}
	}
	return true
}

// rcvdGap is \E k \in 1..MaxRcvd : RcvdAtLeast(x, p, k) /\ ~RcvdAtLeast(y, p, k)
// for a process that received x and y messages in two states.
func rcvdGap(cfg *Config, x, y int) bool { return max(1, y+1) <= min(x, cfg.maxRcvd) }

// FairEnabled reports whether an action under weak fairness is enabled in
// st (fairEnabled): a behaviour that reaches a state where none is may
// stutter there forever, and the temporal property is decided in it
// (LiveSnapshot). For callers that step the model by hand, as the
// explorer page does.
func FairEnabled(cfg *Config, st *State) bool { return fairEnabled(cfg, st) }

// LiveSnapshot is liveSnapshot: the temporal property of cfg's
// specification and the first snapshot index violating its state part at
// st, where a fair behaviour ends (no FairEnabled action), or -1.
func LiveSnapshot(cfg *Config, st *State) (spec.Property, int) { return liveSnapshot(cfg, st) }

// liveSnapshot is the state part of the model's temporal property at a
// state a fair behaviour ends in (see the package documentation): the
// first snapshot index violating it, or -1. The property is SnapshotsEnd
// for the faults specifications and SnapshotsComplete for the others
// (NewConfig allows no other pairing).
func liveSnapshot(cfg *Config, st *State) (spec.Property, int) {
	if cfg.Faults() {
		return spec.PropSnapshotsEnd, SnapshotEnded(cfg, st)
	}
	return spec.PropSnapshotsComplete, SnapshotDone(cfg, st)
}

// SnapshotDone is the state part of SnapshotsComplete (line 355) at a
// state a fair behaviour ends in: \A s \in Snap : Initiated(s) =>
// Complete(s). It returns the first snapshot index violating it, or -1.
func SnapshotDone(cfg *Config, st *State) int {
	for s := range cfg.Snap {
		if Initiated(cfg, st, s) && !Complete(cfg, st, s) {
			return s
		}
	}
	return -1
}
