package model

import (
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// This file mirrors tla/ChandyLamportFaults.tla, definition by definition:
// crash-stop, the failure detector, aborts and rollback recovery. Line
// numbers refer to that module. Its actions are written like those of
// actions.go: an enabled... function holds each action's enabling
// conjuncts, the unexported action returns the successor or the false
// Conjunct, and the exported one takes process ids and returns a
// *NotEnabled.

// allProcs is Proc as a ProcSet.
func allProcs(cfg *Config) ProcSet {
	var ps ProcSet
	for p := range cfg.NumProcs() {
		ps = ps.With(p)
	}
	return ps
}

// initFaults sets the faults variables of InitF (lines 51-59) in st.
func initFaults(cfg *Config, st *State) {
	st.Alive = allProcs(cfg)
	st.AbortedBy = make([]ProcSet, cfg.NumSnaps())
	st.Base = InitApp(cfg)
	st.RestoredFrom = OriginInit
}

// Aborted mirrors Aborted(s) == abortedBy[s] # {} (line 45); s is a
// snapshot index.
func Aborted(st *State, s int) bool { return !st.AbortedBy[s].Empty() }

// Pending mirrors Pending(s) == Initiated(s) /\ ~Complete(s) /\
// ~Aborted(s) (line 46).
func Pending(cfg *Config, st *State, s int) bool {
	return Initiated(cfg, st, s) && !Complete(cfg, st, s) && !Aborted(st, s)
}

// Finished mirrors Finished(s, q) (line 49): q has recorded for s and
// every incoming channel of q is done.
func Finished(cfg *Config, st *State, s, q int) bool {
	if !st.Recorded[s].Has(q) {
		return false
	}
	for _, c := range cfg.in[q] {
		if st.RecChan[s][c] != Done {
			return false
		}
	}
	return true
}

// WaitsFor mirrors WaitsFor(s, q) (line 50): s waits for q until q has
// finished its part and every marker of s that q sent has arrived (each
// outgoing channel of q is done). A survivor waiting for q's marker
// cannot tell a marker lost with q's crash from a slow one.
func WaitsFor(cfg *Config, st *State, s, q int) bool {
	if !Finished(cfg, st, s, q) {
		return true
	}
	for _, c := range cfg.out[q] {
		if st.RecChan[s][c] != Done {
			return true
		}
	}
	return false
}

// enabledSendAppF mirrors the conjuncts SendAppF adds to SendApp (lines
// 65-66).
func enabledSendAppF(cfg *Config, st *State, c int) Conjunct {
	switch {
	case !st.Alive.Has(cfg.from[c]):
		return NotAlive
	case st.Suspected.Has(cfg.to[c]):
		return ReceiverSuspected
	}
	return Enabled
}

// sendAppF mirrors SendAppF(p, q, a) (lines 64-68) for c = <<p, q>>.
func sendAppF(cfg *Config, st *State, c int, a int64) (*State, Conjunct) {
	if k := enabledSendAppF(cfg, st, c); k != Enabled {
		return nil, k
	}
	return sendApp(cfg, st, c, a)
}

// recvAppF mirrors RecvAppF(p, q) (lines 70-73) for c = <<p, q>>.
func recvAppF(cfg *Config, st *State, c int) (*State, Conjunct) {
	if !st.Alive.Has(cfg.to[c]) {
		return nil, NotAlive
	}
	return recvAppAt(cfg, st, c, 1)
}

// initiateF mirrors InitiateF(s) (lines 75-78).
func initiateF(cfg *Config, st *State, s int) (*State, Conjunct) {
	if !st.Alive.Has(cfg.Initiator[s]) {
		return nil, NotAlive
	}
	return initiate(cfg, st, s)
}

// enabledMarkerF mirrors the enabling conjuncts of RecvMarkerF(p, q)
// (lines 82-85; aborted false) and DropMarker(p, q) (lines 91-94; aborted
// true) for c = <<p, q>>.
func enabledMarkerF(cfg *Config, st *State, c int, aborted bool) Conjunct {
	if !st.Alive.Has(cfg.to[c]) {
		return NotAlive
	}
	if k := enabledRecvAt(st, c, 1, KindMarker); k != Enabled {
		return k
	}
	switch ab := Aborted(st, st.Chan[c][0].Snap); {
	case ab && !aborted:
		return MarkerAborted
	case !ab && aborted:
		return MarkerNotAborted
	}
	return Enabled
}

// recvMarkerF mirrors RecvMarkerF(p, q) (lines 81-87) for c = <<p, q>>.
func recvMarkerF(cfg *Config, st *State, c int) (*State, Conjunct) {
	if k := enabledMarkerF(cfg, st, c, false); k != Enabled {
		return nil, k
	}
	return recvMarkerAt(cfg, st, c, 1, true)
}

// dropMarker mirrors DropMarker(p, q) (lines 90-97) for c = <<p, q>>: the
// marker of an aborted snapshot at the head of c is dropped.
func dropMarker(cfg *Config, st *State, c int) (*State, Conjunct) {
	if k := enabledMarkerF(cfg, st, c, true); k != Enabled {
		return nil, k
	}
	n := *st
	n.Chan = cloneSlice(st.Chan)
	n.Chan[c] = removeAt(st.Chan[c], 1)
	return &n, Enabled
}

// enabledCrash mirrors the enabling conjuncts of Crash(p) (lines 102-103).
func enabledCrash(cfg *Config, st *State, p int) Conjunct {
	switch {
	case !st.Alive.Has(p):
		return NotAlive
	case !(st.Crashes < cfg.MaxCrash):
		return CrashesSpent
	}
	return Enabled
}

// crash mirrors Crash(p) (lines 101-107).
func crash(cfg *Config, st *State, p int) (*State, Conjunct) {
	if k := enabledCrash(cfg, st, p); k != Enabled {
		return nil, k
	}
	n := *st
	n.Alive = st.Alive.Without(p)
	n.Crashes++
	return &n, Enabled
}

// enabledSuspect mirrors the enabling conjuncts of Detect(p) (lines
// 111-112; falsely false) and FalseSuspect(p) (lines 119-121; falsely
// true).
func enabledSuspect(cfg *Config, st *State, p int, falsely bool) Conjunct {
	switch {
	case falsely && !cfg.FalseSuspicion:
		return NoFalseSuspicion
	case falsely && !st.Alive.Has(p):
		return NotAlive
	case !falsely && st.Alive.Has(p):
		return StillAlive
	case st.Suspected.Has(p):
		return AlreadySuspected
	}
	return Enabled
}

// suspect mirrors Detect(p) (lines 110-115) and, falsely, FalseSuspect(p)
// (lines 118-124).
func suspect(cfg *Config, st *State, p int, falsely bool) (*State, Conjunct) {
	if k := enabledSuspect(cfg, st, p, falsely); k != Enabled {
		return nil, k
	}
	n := *st
	n.Suspected = st.Suspected.With(p)
	return &n, Enabled
}

// enabledAbort mirrors the enabling conjuncts of Abort(s, q) (lines
// 133-135).
func enabledAbort(cfg *Config, st *State, s, q int) Conjunct {
	switch {
	case !Pending(cfg, st, s):
		return NotPending
	case !st.Suspected.Has(q):
		return NotSuspected
	case !WaitsFor(cfg, st, s, q):
		return NotWaiting
	}
	return Enabled
}

// abort mirrors Abort(s, q) (lines 132-138).
func abort(cfg *Config, st *State, s, q int) (*State, Conjunct) {
	if k := enabledAbort(cfg, st, s, q); k != Enabled {
		return nil, k
	}
	n := *st
	n.AbortedBy = cloneSlice(st.AbortedBy)
	n.AbortedBy[s] = ProcSet{}.With(q)
	return &n, Enabled
}

// Renumber mirrors Renumber(sq) (line 144): sq numbered 1..Len(sq).
func Renumber(sq []spec.AppMsg) []spec.AppMsg {
	if len(sq) == 0 {
		return nil
	}
	n := make([]spec.AppMsg, len(sq))
	for i, m := range sq {
		n[i] = spec.AppMsg{Amt: m.Amt, Seq: uint64(i + 1)}
	}
	return n
}

// restart mirrors Restart(st, ok, from) (lines 151-171): the whole system
// restarts in application state sh, as a new incarnation; st is the
// state before.
func restart(cfg *Config, st *State, sh Shadow, ok bool, from Origin) *State {
	nc := cfg.NumChans()
	b := Shadow{OK: ok, Proc: cloneSlice(sh.Proc), Chan: make([][]spec.AppMsg, nc)}
	for c := 0; c < nc; c++ {
		b.Chan[c] = Renumber(sh.Chan[c])
	}
	n := newState(cfg, b.Proc, func() Shadow { return b })
	n.Alive, n.AbortedBy = allProcs(cfg), make([]ProcSet, cfg.NumSnaps())
	n.Crashes, n.Inc = st.Crashes, st.Inc+1
	n.Base, n.RestoredFrom = b, from
	for c := 0; c < nc; c++ {
		for _, m := range b.Chan[c] {
			n.Chan[c] = append(n.Chan[c], Msg{Kind: KindApp, AppMsg: m})
		}
		n.NSent[c] = uint64(len(b.Chan[c]))
	}
	return n
}

// restoreFrom mirrors RestoreFrom(s) (lines 176-178): restart from
// snapshot s's recorded state, reachable iff pre[s] ends in it.
func restoreFrom(cfg *Config, st *State, s int) *State {
	rec := RecordedApp(st, s)
	from := OriginIncomplete
	if Aborted(st, s) {
		from = OriginAborted
	} else if Complete(cfg, st, s) {
		from = OriginComplete
	}
	return restart(cfg, st, rec, st.Pre[s].Equal(rec), from)
}

// LatestComplete mirrors LatestComplete (lines 181-183): the index of the
// complete snapshot with the highest id, or -1 (the spec's 0) if none.
func LatestComplete(cfg *Config, st *State) int {
	for s := cfg.NumSnaps() - 1; s >= 0; s-- { // Snap is sorted ascending
		if Complete(cfg, st, s) {
			return s
		}
	}
	return -1
}

// enabledRecover mirrors the enabling conjuncts of Recover (lines
// 189-191; s < 0) and RecoverAny(s) (lines 198-200).
func enabledRecover(cfg *Config, st *State, s int) Conjunct {
	switch {
	case st.Suspected.Empty():
		return NoneSuspected
	case !(st.Inc < cfg.MaxRecover):
		return RecoveriesSpent
	case s >= 0 && !Initiated(cfg, st, s):
		return NotInitiated
	}
	if s < 0 {
		for t := range cfg.Snap {
			if Pending(cfg, st, t) {
				return SnapshotPending
			}
		}
	}
	return Enabled
}

// recoverLatest mirrors Recover (lines 188-193).
func recoverLatest(cfg *Config, st *State) (*State, Conjunct) {
	if k := enabledRecover(cfg, st, -1); k != Enabled {
		return nil, k
	}
	if s := LatestComplete(cfg, st); s >= 0 {
		return restoreFrom(cfg, st, s), Enabled
	}
	return restart(cfg, st, st.Base, st.Base.OK, st.RestoredFrom), Enabled
}

// recoverAny mirrors RecoverAny(s) (lines 197-201).
func recoverAny(cfg *Config, st *State, s int) (*State, Conjunct) {
	if k := enabledRecover(cfg, st, s); k != Enabled {
		return nil, k
	}
	return restoreFrom(cfg, st, s), Enabled
}

// The exported faults actions, by process ids.

// chanAction applies a channel action named by its processes.
func chanAction(cfg *Config, st *State, kind ActionKind, p, q spec.ProcID, a int64) (*State, error) {
	c := cfg.ChanIndex(p, q)
	if c < 0 {
		label := fmt.Sprintf("%s(%q,%q)", kind, p, q)
		if kind == ActSendAppF {
			label = fmt.Sprintf("%s(%q,%q,%d)", kind, p, q, a)
		}
		return nil, noSuchChannel(kind, label, p, q)
	}
	return Action{Kind: kind, Chan: c, Amt: a}.Apply(cfg, st)
}

// SendAppF mirrors SendAppF(p, q, a) (lines 64-68): SendApp by a live p to
// an unsuspected q.
func SendAppF(cfg *Config, st *State, p, q spec.ProcID, a int64) (*State, error) {
	return chanAction(cfg, st, ActSendAppF, p, q, a)
}

// RecvAppF mirrors RecvAppF(p, q) (lines 70-73): RecvApp by a live q.
func RecvAppF(cfg *Config, st *State, p, q spec.ProcID) (*State, error) {
	return chanAction(cfg, st, ActRecvAppF, p, q, 0)
}

// RecvMarkerF mirrors RecvMarkerF(p, q) (lines 81-87): RecvMarker by a
// live q, for a marker of a snapshot not aborted.
func RecvMarkerF(cfg *Config, st *State, p, q spec.ProcID) (*State, error) {
	return chanAction(cfg, st, ActRecvMarkerF, p, q, 0)
}

// DropMarker mirrors DropMarker(p, q) (lines 90-97): a live q drops the
// marker of an aborted snapshot at the head of <<p, q>>.
func DropMarker(cfg *Config, st *State, p, q spec.ProcID) (*State, error) {
	return chanAction(cfg, st, ActDropMarker, p, q, 0)
}

// InitiateF mirrors InitiateF(s) (lines 75-78): Initiate by a live
// initiator.
func InitiateF(cfg *Config, st *State, s spec.SnapID) (*State, error) {
	si := cfg.SnapIndex(s)
	if si < 0 {
		return nil, &NotEnabled{Action: fmt.Sprintf("InitiateF(%d)", s), Conjunct: NoSnap, Source: NoSnap.Source(ActInitiateF),
			Why: fmt.Sprintf("snapshot %d is not in Snap", s)}
	}
	return Action{Kind: ActInitiateF, Snap: si}.Apply(cfg, st)
}

// procAction applies a process action named by its id.
func procAction(cfg *Config, st *State, kind ActionKind, p spec.ProcID, s int) (*State, error) {
	pi := cfg.Topo.ProcIndex(p)
	if pi < 0 {
		return nil, &NotEnabled{Action: fmt.Sprintf("%s(%q)", kind, p), Conjunct: NoProc, Source: NoProc.Source(kind),
			Why: fmt.Sprintf("%s is not a process", p)}
	}
	return Action{Kind: kind, Proc: pi, Snap: s}.Apply(cfg, st)
}

// Crash mirrors Crash(p) (lines 101-107): p crashes.
func Crash(cfg *Config, st *State, p spec.ProcID) (*State, error) {
	return procAction(cfg, st, ActCrash, p, 0)
}

// Detect mirrors Detect(p) (lines 110-115): the failure detector suspects
// the crashed process p.
func Detect(cfg *Config, st *State, p spec.ProcID) (*State, error) {
	return procAction(cfg, st, ActDetect, p, 0)
}

// FalseSuspect mirrors FalseSuspect(p) (lines 118-124): the failure
// detector suspects the live process p.
func FalseSuspect(cfg *Config, st *State, p spec.ProcID) (*State, error) {
	return procAction(cfg, st, ActFalseSuspect, p, 0)
}

// Abort mirrors Abort(s, q) (lines 132-138): snapshot s is aborted, q's
// suspicion the cause.
func Abort(cfg *Config, st *State, s spec.SnapID, q spec.ProcID) (*State, error) {
	si := cfg.SnapIndex(s)
	if si < 0 {
		return nil, &NotEnabled{Action: fmt.Sprintf("Abort(%d,%q)", s, q), Conjunct: NoSnap, Source: NoSnap.Source(ActAbort),
			Why: fmt.Sprintf("snapshot %d is not in Snap", s)}
	}
	return procAction(cfg, st, ActAbort, q, si)
}

// Recover mirrors Recover (lines 188-193): roll back to the latest
// complete snapshot, or to the incarnation's start.
func Recover(cfg *Config, st *State) (*State, error) {
	return Action{Kind: ActRecover}.Apply(cfg, st)
}

// RecoverAny mirrors RecoverAny(s) (lines 197-201), the counter-example:
// roll back to snapshot s, whatever its state.
func RecoverAny(cfg *Config, st *State, s spec.SnapID) (*State, error) {
	si := cfg.SnapIndex(s)
	if si < 0 {
		return nil, &NotEnabled{Action: fmt.Sprintf("RecoverAny(%d)", s), Conjunct: NoSnap, Source: NoSnap.Source(ActRecoverAny),
			Why: fmt.Sprintf("snapshot %d is not in Snap", s)}
	}
	return Action{Kind: ActRecoverAny, Snap: si}.Apply(cfg, st)
}

// forEachFaultSuccessor calls f for every enabled instance of the faults
// variant's next-state relation, in its order (lines 204-219): Common
// (SendAppF for each c, a; RecvAppF, InitiateF, RecvMarkerF, DropMarker,
// Crash), Detector when the variant has it (Detect and FalseSuspect for
// each p, Abort for each s, q), then Recover (SpecFaults) or RecoverAny
// for each s (SpecRecoverAny).
func forEachFaultSuccessor(cfg *Config, st *State, f func(Action, *State)) {
	emit := func(a Action, n *State, k Conjunct) {
		if k == Enabled {
			f(a, n)
		}
	}
	eachCommon(cfg, st, emit)
	if cfg.detector() {
		eachDetector(cfg, st, emit)
	}
	eachRecover(cfg, st, emit)
}

// emitter takes an action instance with its successor and false
// conjunct, and passes the enabled ones on.
type emitter func(a Action, n *State, k Conjunct)

// eachCommon: Common (lines 204-210), SendAppF for each c, a; RecvAppF,
// InitiateF, RecvMarkerF, DropMarker and Crash.
func eachCommon(cfg *Config, st *State, emit emitter) {
	nc := cfg.NumChans()
	for c := 0; c < nc; c++ {
		for _, a := range cfg.Amount {
			n, k := sendAppF(cfg, st, c, a)
			emit(Action{Kind: ActSendAppF, Chan: c, Amt: a}, n, k)
		}
	}
	for c := 0; c < nc; c++ {
		n, k := recvAppF(cfg, st, c)
		emit(Action{Kind: ActRecvAppF, Chan: c}, n, k)
	}
	for s := range cfg.Snap {
		n, k := initiateF(cfg, st, s)
		emit(Action{Kind: ActInitiateF, Snap: s}, n, k)
	}
	for c := 0; c < nc; c++ {
		n, k := recvMarkerF(cfg, st, c)
		emit(Action{Kind: ActRecvMarkerF, Chan: c}, n, k)
	}
	for c := 0; c < nc; c++ {
		n, k := dropMarker(cfg, st, c)
		emit(Action{Kind: ActDropMarker, Chan: c}, n, k)
	}
	for p := range cfg.NumProcs() {
		n, k := crash(cfg, st, p)
		emit(Action{Kind: ActCrash, Proc: p}, n, k)
	}
}

// eachDetector: Detector (lines 212-215), Detect and FalseSuspect for
// each p, Abort for each s, q.
func eachDetector(cfg *Config, st *State, emit emitter) {
	np := cfg.NumProcs()
	for p := 0; p < np; p++ {
		n, k := suspect(cfg, st, p, false)
		emit(Action{Kind: ActDetect, Proc: p}, n, k)
	}
	for p := 0; p < np; p++ {
		n, k := suspect(cfg, st, p, true)
		emit(Action{Kind: ActFalseSuspect, Proc: p}, n, k)
	}
	for s := range cfg.Snap {
		for q := 0; q < np; q++ {
			n, k := abort(cfg, st, s, q)
			emit(Action{Kind: ActAbort, Snap: s, Proc: q}, n, k)
		}
	}
}

// eachRecover: Recover (SpecFaults) or RecoverAny for each s
// (SpecRecoverAny); SpecNoDetector has neither.
func eachRecover(cfg *Config, st *State, emit emitter) {
	switch cfg.Variant {
	case VariantFaults:
		n, k := recoverLatest(cfg, st)
		emit(Action{Kind: ActRecover}, n, k)
	case VariantRecoverAny:
		for s := range cfg.Snap {
			n, k := recoverAny(cfg, st, s)
			emit(Action{Kind: ActRecoverAny, Snap: s}, n, k)
		}
	}
}

// faultFairEnabled reports whether an action under weak fairness is
// enabled in st (lines 225-232): a receive of RecvAppF, RecvMarkerF or
// DropMarker (a non-empty channel into a live process: its head is one of
// the three's), Detect (SpecFaults: a crashed process not yet suspected)
// or Abort (SpecFaults, SpecNoDetector).
func faultFairEnabled(cfg *Config, st *State) bool {
	if !cfg.Fair() {
		return false
	}
	for c, ms := range st.Chan {
		if len(ms) > 0 && st.Alive.Has(cfg.to[c]) {
			return true
		}
	}
	if cfg.Variant == VariantFaults && !allProcs(cfg).Minus(st.Alive).Minus(st.Suspected).Empty() {
		return true
	}
	for s := range cfg.Snap {
		for q := range cfg.Topo.Procs {
			if enabledAbort(cfg, st, s, q) == Enabled {
				return true
			}
		}
	}
	return false
}

// Properties (lines 245-287).

// FaultTypeOK mirrors FaultTypeOK (lines 245-254).
func FaultTypeOK(cfg *Config, st *State) bool {
	full := allProcs(cfg)
	return TypeOK(cfg, st) && st.Alive.Minus(full).Empty() && st.Suspected.Minus(full).Empty() &&
		abortedByOK(cfg, st.AbortedBy) && countsOK(cfg, st) &&
		shadowOK(cfg, st.Base) && st.RestoredFrom <= OriginIncomplete
}

// abortedByOK: abortedBy \in [Snap -> SUBSET Proc], at most one cause
// each.
func abortedByOK(cfg *Config, ab []ProcSet) bool {
	if len(ab) != cfg.NumSnaps() {
		return false
	}
	full := allProcs(cfg)
	for _, a := range ab {
		if !a.Minus(full).Empty() || a.Len() > 1 {
			return false
		}
	}
	return true
}

// countsOK: crashes \in 0..MaxCrash, inc \in 0..MaxRecover.
func countsOK(cfg *Config, st *State) bool {
	return 0 <= st.Crashes && st.Crashes <= cfg.MaxCrash && 0 <= st.Inc && st.Inc <= cfg.MaxRecover
}

// MoneyConserved mirrors MoneyConserved == Conserved(CurrentApp) (line
// 258).
func MoneyConserved(cfg *Config, st *State) bool { return Conserved(cfg, CurrentApp(st)) }

// ExactlyOnce mirrors ExactlyOnce (lines 262-265): on every channel the
// numbers received, then those in flight, are 1..nSent[c].
func ExactlyOnce(cfg *Config, st *State) bool {
	for c := range cfg.Topo.Chans {
		// got[c] is 1..Len(got[c]): countsFromOne remembers how much of
		// a long sequence it has checked, so a long replay stays linear.
		if !cfg.countsFromOne(st.Got[c]) {
			return false
		}
		next := uint64(len(st.Got[c])) + 1
		for _, m := range st.Chan[c] {
			if m.Kind != KindApp {
				continue
			}
			if m.Seq != next {
				return false
			}
			next++
		}
		if next-1 != st.NSent[c] {
			return false
		}
	}
	return true
}

// TheoremUnlessAborted mirrors TheoremUnlessAborted (lines 269-273):
// ChandyLamportTheorem for every snapshot not aborted.
func TheoremUnlessAborted(cfg *Config, st *State) bool {
	for s := range cfg.Snap {
		if Aborted(st, s) {
			continue
		}
		if !st.Pre[s].OK || !st.Post[s].OK {
			return false
		}
		if Complete(cfg, st, s) && (!st.Pre[s].Equal(RecordedApp(st, s)) || !st.Post[s].Equal(CurrentApp(st))) {
			return false
		}
	}
	return true
}

// AbortSound mirrors AbortSound (line 276): an aborted snapshot is not
// complete and its cause is suspected.
func AbortSound(cfg *Config, st *State) bool {
	for s := range cfg.Snap {
		if Aborted(st, s) && (Complete(cfg, st, s) || !st.AbortedBy[s].Minus(st.Suspected).Empty()) {
			return false
		}
	}
	return true
}

// RecoveredFromComplete mirrors RecoveredFromComplete (line 280).
func RecoveredFromComplete(cfg *Config, st *State) bool {
	return st.RestoredFrom == OriginInit || st.RestoredFrom == OriginComplete
}

// RecoveryReachable mirrors RecoveryReachable == base.ok (line 284).
func RecoveryReachable(cfg *Config, st *State) bool { return st.Base.OK }

// SnapshotEnded is the state part of SnapshotsEnd (line 287) at a state a
// fair behaviour ends in: \A s \in Snap : Initiated(s) => Complete(s) \/
// Aborted(s). It returns the first snapshot index violating it (a pending
// one), or -1.
func SnapshotEnded(cfg *Config, st *State) int {
	for s := range cfg.Snap {
		if Pending(cfg, st, s) {
			return s
		}
	}
	return -1
}
