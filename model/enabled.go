package model

import (
	"fmt"
	"strconv"

	"github.com/markerwave/markerwave/spec"
)

// Why an action is not enabled. Each action's enabling conjuncts are
// checked once, in its enabled... function in actions.go, which returns the
// first false conjunct as a Conjunct (Enabled when all hold) without
// allocating: the explorer only compares it with Enabled. The exported
// actions turn a false conjunct into a *NotEnabled error that names the
// conjunct as the .tla writes it, with its module and line, and says what
// the state holds instead. A conjunct added to an action in the .tla is
// added to its enabled... function and to conjunctText, nowhere else.

// Conjunct is an enabling conjunct of a TLA+ action, or Enabled.
type Conjunct uint8

const (
	// Enabled: every enabling conjunct holds.
	Enabled Conjunct = iota
	// NoChannel: <<p, q>> \in Chan, which the quantifier of Next (lines
	// 249-253) gives the channel actions.
	NoChannel
	// NoSnap: s \in Snap, which the quantifier of Next gives Initiate.
	NoSnap
	// BudgetSpent: proc[p].sent < Budget[p] (SendApp).
	BudgetSpent
	// LowBalance: proc[p].bal >= a (SendApp).
	LowBalance
	// NoPosition: i \in 1..Len(chan[c]) (RecvAppAt, RecvMarkerAt), or
	// chan[c] # <<>> (RecvAppNoRecord, RecvMarkerNoForward).
	NoPosition
	// NotApp: chan[c][i].kind = "app" (RecvAppAt, RecvAppNoRecord).
	NotApp
	// NotMarker: chan[c][i].kind = "marker" (RecvMarkerAt,
	// RecvMarkerNoForward).
	NotMarker
	// AlreadyRecorded: Initiator[s] \notin recorded[s] (Initiate).
	AlreadyRecorded
)

// Source is where a conjunct is written: the text, the module and the line.
type Source struct {
	TLA    string
	Module string
	Line   int
}

func (s Source) String() string {
	return fmt.Sprintf("%s, %s line %d", s.TLA, s.Module, s.Line)
}

const (
	modCL        = "ChandyLamport.tla"
	modNoRecord  = "ChandyLamportNoRecord.tla"
	modNoForward = "ChandyLamportNoForward.tla"
)

// conjunctText is each enabling conjunct of each action as its .tla module
// writes it.
var conjunctText = map[ActionKind]map[Conjunct]Source{
	ActSendApp: {
		NoChannel:   {"<<p, q>> \\in Chan", modCL, 250},
		BudgetSpent: {"proc[p].sent < Budget[p]", modCL, 162},
		LowBalance:  {"proc[p].bal >= a", modCL, 163},
	},
	ActRecvAppAt: {
		NoChannel:  {"<<p, q>> \\in Chan", modCL, 251},
		NoPosition: {"i \\in 1..Len(chan[<<p, q>>])", modCL, 192},
		NotApp:     {"chan[<<p, q>>][i].kind = \"app\"", modCL, 193},
	},
	ActInitiate: {
		NoSnap:          {"s \\in Snap", modCL, 252},
		AlreadyRecorded: {"Initiator[s] \\notin recorded[s]", modCL, 223},
	},
	ActRecvMarkerAt: {
		NoChannel:  {"<<p, q>> \\in Chan", modCL, 253},
		NoPosition: {"i \\in 1..Len(chan[c])", modCL, 232},
		NotMarker:  {"chan[c][i].kind = \"marker\"", modCL, 233},
	},
	ActRecvAppNoRecord: {
		NoChannel:  {"<<p, q>> \\in Chan", modNoRecord, 17},
		NoPosition: {"chan[<<p, q>>] # <<>>", modNoRecord, 10},
		NotApp:     {"Head(chan[<<p, q>>]).kind = \"app\"", modNoRecord, 11},
	},
	ActRecvMarkerNoForward: {
		NoChannel:  {"<<p, q>> \\in Chan", modNoForward, 26},
		NoPosition: {"chan[c] # <<>>", modNoForward, 11},
		NotMarker:  {"Head(chan[c]).kind = \"marker\"", modNoForward, 12},
	},
}

// Source returns where conjunct k of action kind is written. RecvApp and
// RecvMarker are RecvAppAt and RecvMarkerAt at i = 1 (lines 198, 247).
func (k Conjunct) Source(kind ActionKind) Source {
	switch kind {
	case ActRecvApp:
		kind = ActRecvAppAt
	case ActRecvMarker:
		kind = ActRecvMarkerAt
	}
	return conjunctText[kind][k]
}

// NotEnabled is the error an exported action returns when it is not
// enabled: which instance, which conjunct of its definition is false (and
// where the .tla writes it), and what the state holds instead.
type NotEnabled struct {
	Action   string   // the instance, e.g. SendApp("P1","P2",30)
	Conjunct Conjunct // the first false conjunct
	Source   Source   // where the .tla writes it
	Why      string   // the conjunct's failure in the state's terms
}

func (e *NotEnabled) Error() string {
	return fmt.Sprintf("%s is not enabled: %s (%s)", e.Action, e.Why, e.Source)
}

// notEnabled explains why instance a is not enabled in st, given the
// conjunct its enabled... function found false. It runs only for a
// refused exported action, never in the explorer.
func notEnabled(cfg *Config, st *State, a Action, k Conjunct) *NotEnabled {
	e := &NotEnabled{Action: a.Label(cfg), Conjunct: k, Source: k.Source(a.Kind)}
	switch k {
	case BudgetSpent:
		p := cfg.from[a.Chan]
		id := cfg.Topo.Procs[p]
		e.Why = fmt.Sprintf("%s has spent its budget (proc[%s].sent = %d, Budget[%s] = %d)", id, id, st.Proc[p].Sent, id, cfg.Budget[p])
	case LowBalance:
		p := cfg.from[a.Chan]
		e.Why = fmt.Sprintf("%s's balance %d is less than %d", cfg.Topo.Procs[p], st.Proc[p].Bal, a.Amt)
	case NoPosition:
		c, n := cfg.Topo.Chans[a.Chan], len(st.Chan[a.Chan])
		if n == 0 {
			e.Why = fmt.Sprintf("channel %s is empty in the model", c)
		} else {
			e.Why = fmt.Sprintf("channel %s holds %d messages, none at position %d", c, n, a.pos())
		}
	case NotApp, NotMarker:
		want := "an application message"
		if k == NotMarker {
			want = "a marker"
		}
		at := "the head"
		if a.pos() != 1 {
			at = "position " + strconv.Itoa(a.pos())
		}
		e.Why = fmt.Sprintf("%s of %s is %s, not %s", at, cfg.Topo.Chans[a.Chan], FormatMsg(cfg, st.Chan[a.Chan][a.pos()-1]), want)
	case AlreadyRecorded:
		e.Why = fmt.Sprintf("its initiator %s has already recorded for snapshot %d", cfg.Topo.Procs[cfg.Initiator[a.Snap]], cfg.Snap[a.Snap])
	}
	return e
}

// noSuchChannel is the NotEnabled of a channel action named by processes
// that do not form a channel; label is the instance as TLC prints it.
func noSuchChannel(kind ActionKind, label string, p, q spec.ProcID) *NotEnabled {
	return &NotEnabled{Action: label, Conjunct: NoChannel, Source: NoChannel.Source(kind),
		Why: fmt.Sprintf("<<%s, %s>> is not a channel", p, q)}
}

// pos is the position the instance takes a message from: Pos for the ...At
// actions, else the head.
func (a Action) pos() int {
	if a.Kind == ActRecvAppAt || a.Kind == ActRecvMarkerAt {
		return a.Pos
	}
	return 1
}

// FormatMsg renders a message as the audit does: amt#seq for an
// application message, Marker(s) for a marker.
func FormatMsg(cfg *Config, m Msg) string {
	if m.Kind == KindMarker {
		return fmt.Sprintf("Marker(%d)", cfg.Snap[m.Snap])
	}
	return fmt.Sprintf("%d#%d", m.Amt, m.Seq)
}
