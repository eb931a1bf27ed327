package model

import (
	"math/bits"
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// MsgKind tells an application message from a marker.
type MsgKind uint8

const (
	// KindApp is AppMsg(a, i) == [kind |-> "app", amt |-> a, seq |-> i] (line 56).
	KindApp MsgKind = iota
	// KindMarker is Marker(s) == [kind |-> "marker", snap |-> s] (line 57).
	KindMarker
)

// Msg is a message in a channel: an application message (Kind KindApp,
// with Amt and Seq) or a marker (Kind KindMarker, with Snap, the
// snapshot's index in Config.Snap).
type Msg struct {
	Kind MsgKind
	spec.AppMsg
	Snap int
}

// AppMsgOf mirrors AppMsg(a, i) (line 56).
func AppMsgOf(a int64, i uint64) Msg { return Msg{Kind: KindApp, AppMsg: spec.AppMsg{Amt: a, Seq: i}} }

// MarkerOf mirrors Marker(s) (line 57); s is a snapshot index.
func MarkerOf(s int) Msg { return Msg{Kind: KindMarker, Snap: s} }

// Status is a channel's recording status for one snapshot, Status ==
// {"idle", "recording", "done"} (line 60): spec's one type.
type Status = spec.Status

// The statuses (spec.Idle, spec.Recording, spec.Done).
const (
	Idle      = spec.Idle
	Recording = spec.Recording
	Done      = spec.Done
)

// ProcSet is a set of processes (SUBSET Proc) as a bit mask over process
// indexes, up to MaxProcs; ProcSet{} is the empty set.
type ProcSet [MaxProcs / 64]uint64

// Has reports p \in set.
func (ps ProcSet) Has(p int) bool { return ps[p>>6]&(1<<uint(p&63)) != 0 }

// With is set \cup {p}.
func (ps ProcSet) With(p int) ProcSet {
	ps[p>>6] |= 1 << uint(p&63)
	return ps
}

// Without is set \ {p}.
func (ps ProcSet) Without(p int) ProcSet {
	ps[p>>6] &^= 1 << uint(p&63)
	return ps
}

// Minus is set \ o.
func (ps ProcSet) Minus(o ProcSet) ProcSet {
	for i := range ps {
		ps[i] &^= o[i]
	}
	return ps
}

// Empty reports set = {}.
func (ps ProcSet) Empty() bool { return ps == ProcSet{} }

// Len is Cardinality(set).
func (ps ProcSet) Len() int {
	n := 0
	for _, w := range ps {
		n += bits.OnesCount64(w)
	}
	return n
}

// Shadow mirrors Shadow == [ok : BOOLEAN, proc : [Proc -> LocalState],
// chan : [Chan -> Seq(app message)]] (line 66): a state of the application
// alone, plus ok (has every replayed step been enabled?).
type Shadow struct {
	OK   bool
	Proc []spec.LocalState // by process index
	Chan [][]spec.AppMsg   // by channel index
}

// State is one state of the spec: one field per TLA+ variable (lines
// 68-80), same names and meaning. Functions over Proc, Chan and Snap are
// slices by process, channel and snapshot index.
//
// States are persistent values: actions never modify their input, and a
// successor shares every slice it does not change with its predecessor.
// Treat every slice as read-only.
type State struct {
	Proc     []spec.LocalState   // proc: [Proc -> LocalState]
	Chan     [][]Msg             // chan: [Chan -> Seq(message)]
	NSent    []uint64            // nSent (ghost): [Chan -> Nat]
	Got      [][]uint64          // got (ghost): [Chan -> Seq(Nat)]
	Recorded []ProcSet           // recorded: [Snap -> SUBSET Proc]
	RecProc  [][]spec.LocalState // recProc: [Snap -> [Proc -> LocalState]]
	RecChan  [][]Status          // recChan: [Snap -> [Chan -> Status]]
	RecMsgs  [][][]spec.AppMsg   // recMsgs: [Snap -> [Chan -> Seq(message)]] (app messages only)
	CutSent  [][]uint64          // cutSent (ghost): [Snap -> [Chan -> Nat]]
	CutGot   [][][]uint64        // cutGot (ghost): [Snap -> [Chan -> Seq(Nat)]]
	Pre      []Shadow            // pre (ghost): [Snap -> Shadow]
	Post     []Shadow            // post (ghost): [Snap -> Shadow]

	// The variables of tla/ChandyLamportFaults.tla (lines 33-40), set
	// only when Config.Faults(): zero otherwise.
	Alive        ProcSet   // alive: SUBSET Proc
	Suspected    ProcSet   // suspected: SUBSET Proc
	AbortedBy    []ProcSet // abortedBy: [Snap -> SUBSET Proc], {} or {cause}
	Crashes      int       // crashes: crashes so far
	Inc          int       // inc: the incarnation
	Base         Shadow    // base (ghost): the state the incarnation started from
	RestoredFrom Origin    // restoredFrom (ghost)

	// inPlace: the actions update this state's slices in place (InPlace).
	inPlace bool
}

// Origin is what an incarnation was restored from, the values of
// restoredFrom in tla/ChandyLamportFaults.tla (line 254).
type Origin uint8

const (
	OriginInit       Origin = iota // "init": the first incarnation
	OriginComplete                 // "complete": a complete snapshot
	OriginAborted                  // "aborted": an aborted snapshot
	OriginIncomplete               // "incomplete": a snapshot still pending
)

func (o Origin) String() string {
	switch o {
	case OriginInit:
		return "init"
	case OriginComplete:
		return "complete"
	case OriginAborted:
		return "aborted"
	case OriginIncomplete:
		return "incomplete"
	}
	return "?"
}

// Persistent-update helpers: each returns a fresh copy, leaving its
// argument untouched.

func cloneSlice[T any](s []T) []T { return append([]T(nil), s...) }

// appendCopy is Append(sq, x) on a fresh backing array.
func appendCopy[T any](sq []T, x T) []T {
	n := make([]T, len(sq)+1)
	copy(n, sq)
	n[len(sq)] = x
	return n
}

// removeAt mirrors RemoveAt(sq, i) (line 96), i from 1.
func removeAt[T any](sq []T, i int) []T {
	n := make([]T, 0, len(sq)-1)
	n = append(n, sq[:i-1]...)
	return append(n, sq[i:]...)
}

func (sh Shadow) clone() Shadow {
	return Shadow{OK: sh.OK, Proc: cloneSlice(sh.Proc), Chan: cloneSlice(sh.Chan)}
}

// update is the shadow an action is about to change: a copy (clone), or
// sh itself for an in-place state (InPlace).
func (sh Shadow) update(inPlace bool) Shadow {
	if inPlace {
		return sh
	}
	return sh.clone()
}

// shadows are the pre and post slices a step sets, one shadow per
// snapshot: fresh ones for a persistent state, its own for an in-place
// one.
func (st *State) shadows() (pre, post []Shadow) {
	if st.inPlace {
		return st.Pre, st.Post
	}
	return make([]Shadow, len(st.Pre)), make([]Shadow, len(st.Post))
}

// Equal reports whether two shadows are the same TLA+ value.
func (sh Shadow) Equal(o Shadow) bool {
	if sh.OK != o.OK || len(sh.Proc) != len(o.Proc) || len(sh.Chan) != len(o.Chan) {
		return false
	}
	for i := range sh.Proc {
		if sh.Proc[i] != o.Proc[i] {
			return false
		}
	}
	for i := range sh.Chan {
		if !slices.Equal(sh.Chan[i], o.Chan[i]) {
			return false
		}
	}
	return true
}
