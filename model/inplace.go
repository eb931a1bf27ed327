package model

import "github.com/markerwave/markerwave/spec"

// States are persistent (see State): an action copies every slice it
// changes, so that the explorer can keep every state it has seen. A
// replay keeps only its current state, and copying slices over every
// channel and every snapshot at each step made its cost per step grow
// with the number of processes. InPlace gives a replay a state of its
// own that the actions update in place: the same actions, the same
// successors, each update costing what the step changes.
//
// An action on an in-place state st returns a successor that reuses
// st's slices: st itself must not be used again once an action on it
// succeeded (an action that is not enabled changes nothing). Every
// slice of an in-place state is its own, except that cutGot[s][c] is a
// prefix of got[c] (RecordState sets it so): got[c] only ever grows at
// its end, past that prefix, so the prefix never changes.

// InPlace returns a copy of st, sharing nothing with it, whose
// successors the actions build in place. A model with the failure
// handling (cfg.Faults()) keeps persistent states: its st is returned
// as it is.
func InPlace(cfg *Config, st *State) *State {
	if cfg.Faults() {
		return st
	}
	n := *st
	n.Proc = cloneSlice(st.Proc)
	n.Chan = cloneEach(st.Chan)
	n.NSent = cloneSlice(st.NSent)
	n.Got = cloneEach(st.Got)
	n.Recorded = cloneSlice(st.Recorded)
	n.RecProc = cloneEach(st.RecProc)
	n.RecChan = cloneEach(st.RecChan)
	n.CutSent = cloneEach(st.CutSent)
	n.RecMsgs = make([][][]spec.AppMsg, len(st.RecMsgs))
	n.CutGot = make([][][]uint64, len(st.CutGot))
	for s := range st.RecMsgs {
		n.RecMsgs[s] = cloneEach(st.RecMsgs[s])
		n.CutGot[s] = cloneEach(st.CutGot[s])
	}
	n.Pre, n.Post = cloneShadows(st.Pre), cloneShadows(st.Post)
	n.inPlace = true
	return &n
}

// Persistent is a persistent view of st: actions on it copy what they
// change and leave st as it is. It shares an in-place st's slices, so it
// is valid until st next steps in place.
func Persistent(st *State) *State {
	n := *st
	n.inPlace = false
	return &n
}

// IsInPlace reports whether st is an in-place state (InPlace).
func (st *State) IsInPlace() bool { return st.inPlace }

func cloneEach[T any](s [][]T) [][]T {
	n := make([][]T, len(s))
	for i := range s {
		n[i] = cloneSlice(s[i])
	}
	return n
}

func cloneShadows(shs []Shadow) []Shadow {
	n := make([]Shadow, len(shs))
	for i, sh := range shs {
		n[i] = Shadow{OK: sh.OK, Proc: cloneSlice(sh.Proc), Chan: cloneEach(sh.Chan)}
	}
	return n
}

// upd is the slice s of state st that an action is about to change: a
// fresh copy of a persistent state's, an in-place state's own.
func upd[T any](inPlace bool, s []T) []T {
	if inPlace {
		return s
	}
	return cloneSlice(s)
}

// push is Append(sq, x): on a fresh array for a persistent state, at the
// end of sq for an in-place one.
func push[T any](inPlace bool, sq []T, x T) []T {
	if inPlace {
		return append(sq, x)
	}
	return appendCopy(sq, x)
}

// pop is RemoveAt(sq, i) (line 96), i from 1: a fresh array for a
// persistent state; sq itself, shortened, for an in-place one.
func pop[T any](inPlace bool, sq []T, i int) []T {
	switch {
	case !inPlace:
		return removeAt(sq, i)
	case i == 1:
		return sq[1:]
	}
	return append(sq[:i-1], sq[i:]...)
}
