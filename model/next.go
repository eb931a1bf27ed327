package model

import (
	"fmt"
	"strconv"
)

// ActionKind names the TLA+ action an instance belongs to.
type ActionKind uint8

const (
	ActSendApp ActionKind = iota
	ActRecvApp
	ActRecvAppAt
	ActInitiate
	ActRecvMarker
	ActRecvMarkerAt
	ActRecvAppNoRecord
	ActRecvMarkerNoForward
	// ActLose is Lose(p, q) of tla/ChandyLamportLossy.tla.
	ActLose
	// The actions of tla/ChandyLamportFaults.tla.
	ActSendAppF
	ActRecvAppF
	ActInitiateF
	ActRecvMarkerF
	ActDropMarker
	ActCrash
	ActDetect
	ActFalseSuspect
	ActAbort
	ActRecover
	ActRecoverAny
)

var actionNames = [...]string{"SendApp", "RecvApp", "RecvAppAt", "Initiate", "RecvMarker", "RecvMarkerAt", "RecvAppNoRecord", "RecvMarkerNoForward", "Lose",
	"SendAppF", "RecvAppF", "InitiateF", "RecvMarkerF", "DropMarker", "Crash", "Detect", "FalseSuspect", "Abort", "Recover", "RecoverAny"}

func (k ActionKind) String() string {
	if int(k) < len(actionNames) {
		return actionNames[k]
	}
	return "?"
}

// Receive reports whether the action takes a message off a channel: the
// actions under weak fairness in Spec (RecvApp, RecvMarker; lines 257-258) and
// SpecNoForward (RecvApp, RecvMarkerNoForward), the non-FIFO and no-record
// receives, and RecvAppF, RecvMarkerF and DropMarker of the faults module.
func (k ActionKind) Receive() bool {
	switch k {
	case ActRecvApp, ActRecvAppAt, ActRecvMarker, ActRecvMarkerAt, ActRecvAppNoRecord, ActRecvMarkerNoForward,
		ActRecvAppF, ActRecvMarkerF, ActDropMarker:
		return true
	}
	return false
}

// Action is one instance of an action: the action and its parameters.
// Chan is a channel index (for channel actions), Amt an amount (SendApp),
// Snap a snapshot index (Initiate, Abort, RecoverAny), Pos a position from
// 1 (the ...At actions), Proc a process index (Crash, Detect, FalseSuspect,
// Abort's cause).
type Action struct {
	Kind ActionKind
	Chan int
	Amt  int64
	Snap int
	Pos  int
	Proc int
}

// Label renders the instance as a TLA+ action, e.g. RecvMarker("P1","P2") (as TLC prints
// instances).
func (a Action) Label(cfg *Config) string {
	pq := func() string {
		c := cfg.Topo.Chans[a.Chan]
		return strconv.Quote(string(c.From)) + "," + strconv.Quote(string(c.To))
	}
	switch a.Kind {
	case ActSendApp, ActSendAppF:
		return fmt.Sprintf("%s(%s,%d)", a.Kind, pq(), a.Amt)
	case ActInitiate, ActInitiateF, ActRecoverAny:
		return fmt.Sprintf("%s(%d)", a.Kind, cfg.Snap[a.Snap])
	case ActRecvAppAt, ActRecvMarkerAt:
		return fmt.Sprintf("%s(%s,%d)", a.Kind, pq(), a.Pos)
	case ActCrash, ActDetect, ActFalseSuspect:
		return fmt.Sprintf("%s(%s)", a.Kind, strconv.Quote(string(cfg.Topo.Procs[a.Proc])))
	case ActAbort:
		return fmt.Sprintf("Abort(%d,%s)", cfg.Snap[a.Snap], strconv.Quote(string(cfg.Topo.Procs[a.Proc])))
	case ActRecover:
		return "Recover"
	}
	return fmt.Sprintf("%s(%s)", a.Kind, pq())
}

// Apply runs the instance on st: the successor, or a *NotEnabled saying
// which conjunct of the action is false in st.
func (a Action) Apply(cfg *Config, st *State) (*State, error) {
	n, k := a.apply(cfg, st)
	if k != Enabled {
		return nil, notEnabled(cfg, st, a, k)
	}
	return n, nil
}

// apply runs the instance on st: the successor, or the false conjunct.
// One case per action of the specs (the Next disjuncts of
// tla/ChandyLamport.tla and its variants, and tla/ChandyLamportFaults.tla
// lines 61-201): a literal table of them, left whole on purpose.
func (a Action) apply(cfg *Config, st *State) (*State, Conjunct) {
	switch a.Kind {
	case ActSendApp:
		return sendApp(cfg, st, a.Chan, a.Amt)
	case ActRecvApp:
		return recvAppAt(cfg, st, a.Chan, 1)
	case ActRecvAppAt:
		return recvAppAt(cfg, st, a.Chan, a.Pos)
	case ActInitiate:
		return initiate(cfg, st, a.Snap)
	case ActRecvMarker:
		return recvMarkerAt(cfg, st, a.Chan, 1, true)
	case ActRecvMarkerAt:
		return recvMarkerAt(cfg, st, a.Chan, a.Pos, true)
	case ActRecvAppNoRecord:
		return recvAppNoRecord(cfg, st, a.Chan)
	case ActRecvMarkerNoForward:
		return recvMarkerAt(cfg, st, a.Chan, 1, false)
	case ActLose:
		return lose(st, a.Chan)
	case ActSendAppF:
		return sendAppF(cfg, st, a.Chan, a.Amt)
	case ActRecvAppF:
		return recvAppF(cfg, st, a.Chan)
	case ActInitiateF:
		return initiateF(cfg, st, a.Snap)
	case ActRecvMarkerF:
		return recvMarkerF(cfg, st, a.Chan)
	case ActDropMarker:
		return dropMarker(cfg, st, a.Chan)
	case ActCrash:
		return crash(cfg, st, a.Proc)
	case ActDetect:
		return suspect(cfg, st, a.Proc, false)
	case ActFalseSuspect:
		return suspect(cfg, st, a.Proc, true)
	case ActAbort:
		return abort(cfg, st, a.Snap, a.Proc)
	case ActRecover:
		return recoverLatest(cfg, st)
	case ActRecoverAny:
		return recoverAny(cfg, st, a.Snap)
	}
	panic("model: unknown action kind " + a.Kind.String())
}

// Transition is an enabled action instance and the state it leads to.
type Transition struct {
	Label  string
	Action Action
	State  *State
}

// Next returns every enabled instance of the variant's next-state relation
// in st with its successor, in the order TLC enumerates the disjuncts and
// quantifiers (Chan, Amount and Snap in sorted order), duplicates kept:
//
//	Next (lines 249-253):        SendApp for each c \in Chan, a \in Amount;
//	                             RecvApp for each c; Initiate for each s;
//	                             RecvMarker for each c.
//	NextNonFIFO:                 RecvAppAt and RecvMarkerAt for each c and
//	                             each i \in 1..Len(chan[c]).
//	NextNoRecord, NextNoForward: RecvAppNoRecord, RecvMarkerNoForward in
//	                             place of RecvApp, RecvMarker.
//	NextLossy:                   Next, then Lose for each c.
//	NextFaults, NextNoDetector,  see forEachFaultSuccessor
//	NextRecoverAny:              (tla/ChandyLamportFaults.tla).
func Next(cfg *Config, st *State) []Transition {
	var out []Transition
	forEachSuccessor(cfg, st, func(a Action, n *State) {
		out = append(out, Transition{Label: a.Label(cfg), Action: a, State: n})
	})
	return out
}

// forEachSuccessor calls f for every enabled instance, in Next's order:
// the disjuncts of Next (lines 249-253) in turn, each a named step.
//
// The successors of an in-place state (InPlace) are persistent states
// built from it, valid until it next steps in place; st is left as it is.
func forEachSuccessor(cfg *Config, st *State, f func(Action, *State)) {
	st = Persistent(st)
	if cfg.Faults() {
		forEachFaultSuccessor(cfg, st, f)
		return
	}
	eachSendApp(cfg, st, f)
	for c := range cfg.NumChans() {
		eachRecvApp(cfg, st, c, f)
	}
	for s := range cfg.Snap {
		if n, k := initiate(cfg, st, s); k == Enabled {
			f(Action{Kind: ActInitiate, Snap: s}, n)
		}
	}
	for c := range cfg.NumChans() {
		eachRecvMarker(cfg, st, c, f)
	}
	if cfg.Variant == VariantLossy {
		eachLose(cfg, st, f)
	}
}

// eachSendApp: \E c \in Chan, a \in Amount : SendApp(c[1], c[2], a).
func eachSendApp(cfg *Config, st *State, f func(Action, *State)) {
	for c := range cfg.NumChans() {
		for _, a := range cfg.Amount {
			if n, k := sendApp(cfg, st, c, a); k == Enabled {
				f(Action{Kind: ActSendApp, Chan: c, Amt: a}, n)
			}
		}
	}
}

// eachRecvApp: the receive of an app message on c the variant has:
// RecvAppAt at each position (NonFIFO), RecvAppNoRecord, or RecvApp.
func eachRecvApp(cfg *Config, st *State, c int, f func(Action, *State)) {
	switch cfg.Variant {
	case VariantNonFIFO:
		for i := 1; i <= len(st.Chan[c]); i++ {
			if n, k := recvAppAt(cfg, st, c, i); k == Enabled {
				f(Action{Kind: ActRecvAppAt, Chan: c, Pos: i}, n)
			}
		}
	case VariantNoRecord:
		if n, k := recvAppNoRecord(cfg, st, c); k == Enabled {
			f(Action{Kind: ActRecvAppNoRecord, Chan: c}, n)
		}
	default:
		if n, k := recvAppAt(cfg, st, c, 1); k == Enabled {
			f(Action{Kind: ActRecvApp, Chan: c}, n)
		}
	}
}

// eachRecvMarker: the receive of a marker on c the variant has:
// RecvMarkerAt at each position (NonFIFO), RecvMarkerNoForward, or
// RecvMarker.
func eachRecvMarker(cfg *Config, st *State, c int, f func(Action, *State)) {
	switch cfg.Variant {
	case VariantNonFIFO:
		for i := 1; i <= len(st.Chan[c]); i++ {
			if n, k := recvMarkerAt(cfg, st, c, i, true); k == Enabled {
				f(Action{Kind: ActRecvMarkerAt, Chan: c, Pos: i}, n)
			}
		}
	case VariantNoForward:
		if n, k := recvMarkerAt(cfg, st, c, 1, false); k == Enabled {
			f(Action{Kind: ActRecvMarkerNoForward, Chan: c}, n)
		}
	default:
		if n, k := recvMarkerAt(cfg, st, c, 1, true); k == Enabled {
			f(Action{Kind: ActRecvMarker, Chan: c}, n)
		}
	}
}

// eachLose: \E c \in Chan : Lose(c) (tla/ChandyLamportLossy.tla).
func eachLose(cfg *Config, st *State, f func(Action, *State)) {
	for c := range cfg.NumChans() {
		if n, k := lose(st, c); k == Enabled {
			f(Action{Kind: ActLose, Chan: c}, n)
		}
	}
}

// fairEnabled reports whether some action under weak fairness is enabled
// in st: a receive in Spec, SpecNoForward or SpecLossy (every receive
// there is fair; Lose is not);
// never in SpecNonFIFO and SpecNoRecord, which have no fairness; for the
// faults specifications, see faultFairEnabled.
func fairEnabled(cfg *Config, st *State) bool {
	if cfg.Faults() {
		return faultFairEnabled(cfg, st)
	}
	if !cfg.Fair() {
		return false
	}
	for _, ms := range st.Chan {
		if len(ms) > 0 { // the head is an app message (RecvApp) or a marker (RecvMarker...)
			return true
		}
	}
	return false
}
