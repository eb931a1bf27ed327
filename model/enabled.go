package model

import (
	"fmt"
	"strconv"
	"strings"

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

	// The conjuncts of tla/ChandyLamportFaults.tla.

	// NoProc: p \in Proc, which the quantifier of Next gives the process
	// actions.
	NoProc
	// NotAlive: the acting process is live (p \in alive, q \in alive,
	// Initiator[s] \in alive).
	NotAlive
	// ReceiverSuspected: q \notin suspected (SendAppF).
	ReceiverSuspected
	// MarkerAborted: ~Aborted(Head(chan[<<p, q>>]).snap) (RecvMarkerF).
	MarkerAborted
	// MarkerNotAborted: Aborted(Head(chan[<<p, q>>]).snap) (DropMarker).
	MarkerNotAborted
	// CrashesSpent: crashes < MaxCrash (Crash).
	CrashesSpent
	// StillAlive: p \notin alive (Detect).
	StillAlive
	// NoFalseSuspicion: FalseSuspicion (FalseSuspect).
	NoFalseSuspicion
	// AlreadySuspected: p \notin suspected (Detect, FalseSuspect).
	AlreadySuspected
	// NotPending: Pending(s) (Abort).
	NotPending
	// NotSuspected: q \in suspected (Abort).
	NotSuspected
	// NotWaiting: WaitsFor(s, q) (Abort).
	NotWaiting
	// NoneSuspected: suspected # {} (Recover, RecoverAny).
	NoneSuspected
	// RecoveriesSpent: inc < MaxRecover (Recover, RecoverAny).
	RecoveriesSpent
	// SnapshotPending: \A s \in Snap : ~Pending(s) (Recover).
	SnapshotPending
	// NotInitiated: Initiated(s) (RecoverAny).
	NotInitiated
)

// Source is where a conjunct is written: the text, the module and the
// line (spec.Quote, which model/barrier quotes its conjuncts with too).
type Source = spec.Quote

const (
	modCL        = "ChandyLamport.tla"
	modNoRecord  = "ChandyLamportNoRecord.tla"
	modNoForward = "ChandyLamportNoForward.tla"
	modLossy     = "ChandyLamportLossy.tla"
	modFaults    = "ChandyLamportFaults.tla"
)

// conjunctText is each enabling conjunct of each action as its .tla module
// writes it.
var conjunctText = map[ActionKind]map[Conjunct]Source{
	ActSendApp: {
		NoChannel:   {TLA: "<<p, q>> \\in Chan", Module: modCL, Line: 250},
		BudgetSpent: {TLA: "proc[p].sent < Budget[p]", Module: modCL, Line: 162},
		LowBalance:  {TLA: "proc[p].bal >= a", Module: modCL, Line: 163},
	},
	ActRecvAppAt: {
		NoChannel:  {TLA: "<<p, q>> \\in Chan", Module: modCL, Line: 251},
		NoPosition: {TLA: "i \\in 1..Len(chan[<<p, q>>])", Module: modCL, Line: 192},
		NotApp:     {TLA: "chan[<<p, q>>][i].kind = \"app\"", Module: modCL, Line: 193},
	},
	ActInitiate: {
		NoSnap:          {TLA: "s \\in Snap", Module: modCL, Line: 252},
		AlreadyRecorded: {TLA: "Initiator[s] \\notin recorded[s]", Module: modCL, Line: 223},
	},
	ActRecvMarkerAt: {
		NoChannel:  {TLA: "<<p, q>> \\in Chan", Module: modCL, Line: 253},
		NoPosition: {TLA: "i \\in 1..Len(chan[c])", Module: modCL, Line: 232},
		NotMarker:  {TLA: "chan[c][i].kind = \"marker\"", Module: modCL, Line: 233},
	},
	ActRecvAppNoRecord: {
		NoChannel:  {TLA: "<<p, q>> \\in Chan", Module: modNoRecord, Line: 17},
		NoPosition: {TLA: "chan[<<p, q>>] # <<>>", Module: modNoRecord, Line: 10},
		NotApp:     {TLA: "Head(chan[<<p, q>>]).kind = \"app\"", Module: modNoRecord, Line: 11},
	},
	ActRecvMarkerNoForward: {
		NoChannel:  {TLA: "<<p, q>> \\in Chan", Module: modNoForward, Line: 26},
		NoPosition: {TLA: "chan[c] # <<>>", Module: modNoForward, Line: 11},
		NotMarker:  {TLA: "Head(chan[c]).kind = \"marker\"", Module: modNoForward, Line: 12},
	},
	ActLose: {
		NoChannel:  {TLA: "<<p, q>> \\in Chan", Module: modLossy, Line: 16},
		NoPosition: {TLA: "chan[<<p, q>>] # <<>>", Module: modLossy, Line: 12},
	},
	ActSendAppF: {
		NoChannel:         {TLA: "<<p, q>> \\in Chan", Module: modFaults, Line: 205},
		NotAlive:          {TLA: "p \\in alive", Module: modFaults, Line: 65},
		ReceiverSuspected: {TLA: "q \\notin suspected", Module: modFaults, Line: 66},
		BudgetSpent:       {TLA: "proc[p].sent < Budget[p]", Module: modCL, Line: 162},
		LowBalance:        {TLA: "proc[p].bal >= a", Module: modCL, Line: 163},
	},
	ActRecvAppF: {
		NoChannel:  {TLA: "<<p, q>> \\in Chan", Module: modFaults, Line: 206},
		NotAlive:   {TLA: "q \\in alive", Module: modFaults, Line: 71},
		NoPosition: {TLA: "i \\in 1..Len(chan[<<p, q>>])", Module: modCL, Line: 192},
		NotApp:     {TLA: "chan[<<p, q>>][i].kind = \"app\"", Module: modCL, Line: 193},
	},
	ActInitiateF: {
		NoSnap:          {TLA: "s \\in Snap", Module: modFaults, Line: 207},
		NotAlive:        {TLA: "Initiator[s] \\in alive", Module: modFaults, Line: 76},
		AlreadyRecorded: {TLA: "Initiator[s] \\notin recorded[s]", Module: modCL, Line: 223},
	},
	ActRecvMarkerF: {
		NoChannel:     {TLA: "<<p, q>> \\in Chan", Module: modFaults, Line: 208},
		NotAlive:      {TLA: "q \\in alive", Module: modFaults, Line: 82},
		NoPosition:    {TLA: "chan[<<p, q>>] # <<>>", Module: modFaults, Line: 83},
		NotMarker:     {TLA: "Head(chan[<<p, q>>]).kind = \"marker\"", Module: modFaults, Line: 84},
		MarkerAborted: {TLA: "~Aborted(Head(chan[<<p, q>>]).snap)", Module: modFaults, Line: 85},
	},
	ActDropMarker: {
		NoChannel:        {TLA: "<<p, q>> \\in Chan", Module: modFaults, Line: 209},
		NotAlive:         {TLA: "q \\in alive", Module: modFaults, Line: 91},
		NoPosition:       {TLA: "chan[<<p, q>>] # <<>>", Module: modFaults, Line: 92},
		NotMarker:        {TLA: "Head(chan[<<p, q>>]).kind = \"marker\"", Module: modFaults, Line: 93},
		MarkerNotAborted: {TLA: "Aborted(Head(chan[<<p, q>>]).snap)", Module: modFaults, Line: 94},
	},
	ActCrash: {
		NoProc:       {TLA: "p \\in Proc", Module: modFaults, Line: 210},
		NotAlive:     {TLA: "p \\in alive", Module: modFaults, Line: 102},
		CrashesSpent: {TLA: "crashes < MaxCrash", Module: modFaults, Line: 103},
	},
	ActDetect: {
		NoProc:           {TLA: "p \\in Proc", Module: modFaults, Line: 213},
		StillAlive:       {TLA: "p \\notin alive", Module: modFaults, Line: 111},
		AlreadySuspected: {TLA: "p \\notin suspected", Module: modFaults, Line: 112},
	},
	ActFalseSuspect: {
		NoProc:           {TLA: "p \\in Proc", Module: modFaults, Line: 214},
		NoFalseSuspicion: {TLA: "FalseSuspicion", Module: modFaults, Line: 119},
		NotAlive:         {TLA: "p \\in alive", Module: modFaults, Line: 120},
		AlreadySuspected: {TLA: "p \\notin suspected", Module: modFaults, Line: 121},
	},
	ActAbort: {
		NoSnap:       {TLA: "s \\in Snap", Module: modFaults, Line: 215},
		NoProc:       {TLA: "q \\in Proc", Module: modFaults, Line: 215},
		NotPending:   {TLA: "Pending(s)", Module: modFaults, Line: 133},
		NotSuspected: {TLA: "q \\in suspected", Module: modFaults, Line: 134},
		NotWaiting:   {TLA: "WaitsFor(s, q)", Module: modFaults, Line: 135},
	},
	ActRecover: {
		NoneSuspected:   {TLA: "suspected # {}", Module: modFaults, Line: 189},
		RecoveriesSpent: {TLA: "inc < MaxRecover", Module: modFaults, Line: 190},
		SnapshotPending: {TLA: "\\A s \\in Snap : ~Pending(s)", Module: modFaults, Line: 191},
	},
	ActRecoverAny: {
		NoSnap:          {TLA: "s \\in Snap", Module: modFaults, Line: 219},
		NoneSuspected:   {TLA: "suspected # {}", Module: modFaults, Line: 198},
		RecoveriesSpent: {TLA: "inc < MaxRecover", Module: modFaults, Line: 199},
		NotInitiated:    {TLA: "Initiated(s)", Module: modFaults, Line: 200},
	},
}

// Source returns where conjunct k of action kind is written. RecvApp and
// RecvMarker are RecvAppAt and RecvMarkerAt at i = 1 (lines 198, 247).
func (k Conjunct) Source(kind ActionKind) Source {
	if src, ok := conjunctText[kind][k]; ok {
		return src
	}
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
	default:
		e.Why = faultWhy(cfg, st, a, k)
	}
	return e
}

// faultWhy says in the state's terms why a conjunct of an action of
// tla/ChandyLamportFaults.tla is false: one about processes (crashes,
// suspicions) or one about snapshots.
func faultWhy(cfg *Config, st *State, a Action, k Conjunct) string {
	if why, ok := procWhy(cfg, st, a, k); ok {
		return why
	}
	if why, ok := snapWhy(cfg, st, a, k); ok {
		return why
	}
	return k.Source(a.Kind).TLA + " is false"
}

// procNames renders a set of processes: {P1, P2}.
func procNames(cfg *Config, ps ProcSet) string {
	var ids []string
	for p, id := range cfg.Topo.Procs {
		if ps.Has(p) {
			ids = append(ids, string(id))
		}
	}
	return "{" + strings.Join(ids, ", ") + "}"
}

// procWhy explains a false conjunct about crashes and suspicions.
func procWhy(cfg *Config, st *State, a Action, k Conjunct) (string, bool) {
	switch k {
	case NotAlive:
		return fmt.Sprintf("%s has crashed (alive = %s)", cfg.Topo.Procs[a.actor(cfg)], procNames(cfg, st.Alive)), true
	case ReceiverSuspected:
		return fmt.Sprintf("the receiver %s is suspected", cfg.Topo.Procs[cfg.to[a.Chan]]), true
	case CrashesSpent:
		return fmt.Sprintf("%d of MaxCrash = %d crashes have happened", st.Crashes, cfg.MaxCrash), true
	case StillAlive:
		return fmt.Sprintf("%s has not crashed", cfg.Topo.Procs[a.Proc]), true
	case NoFalseSuspicion:
		return "the model allows no false suspicion (FalseSuspicion = FALSE)", true
	case AlreadySuspected:
		return fmt.Sprintf("%s is already suspected", cfg.Topo.Procs[a.Proc]), true
	case NotSuspected:
		return fmt.Sprintf("%s is not suspected (suspected = %s)", cfg.Topo.Procs[a.Proc], procNames(cfg, st.Suspected)), true
	case NoneSuspected:
		return "no process is suspected", true
	}
	return "", false
}

// snapWhy explains a false conjunct about snapshots and recoveries.
func snapWhy(cfg *Config, st *State, a Action, k Conjunct) (string, bool) {
	switch k {
	case MarkerAborted:
		s := st.Chan[a.Chan][0].Snap
		return fmt.Sprintf("the head of %s is a marker of snapshot %d, aborted (cause %s)", cfg.Topo.Chans[a.Chan], cfg.Snap[s], procNames(cfg, st.AbortedBy[s])), true
	case MarkerNotAborted:
		return fmt.Sprintf("the head of %s is a marker of snapshot %d, which is not aborted", cfg.Topo.Chans[a.Chan], cfg.Snap[st.Chan[a.Chan][0].Snap]), true
	case NotPending:
		return notPendingWhy(cfg, st, a.Snap), true
	case NotWaiting:
		return fmt.Sprintf("snapshot %d does not wait for %s: it finished its part and its markers arrived", cfg.Snap[a.Snap], cfg.Topo.Procs[a.Proc]), true
	case RecoveriesSpent:
		return fmt.Sprintf("%d of MaxRecover = %d recoveries have happened", st.Inc, cfg.MaxRecover), true
	case SnapshotPending:
		return pendingWhy(cfg, st)
	case NotInitiated:
		return fmt.Sprintf("snapshot %d is not initiated", cfg.Snap[a.Snap]), true
	}
	return "", false
}

// notPendingWhy says why snapshot s is not Pending(s).
func notPendingWhy(cfg *Config, st *State, s int) string {
	switch {
	case !Initiated(cfg, st, s):
		return fmt.Sprintf("snapshot %d is not initiated", cfg.Snap[s])
	case Aborted(st, s):
		return fmt.Sprintf("snapshot %d is already aborted", cfg.Snap[s])
	}
	return fmt.Sprintf("snapshot %d is complete", cfg.Snap[s])
}

// pendingWhy names a pending snapshot, if there is one.
func pendingWhy(cfg *Config, st *State) (string, bool) {
	for s := range cfg.Snap {
		if Pending(cfg, st, s) {
			return fmt.Sprintf("snapshot %d is pending: neither complete nor aborted", cfg.Snap[s]), true
		}
	}
	return "", false
}

// actor is the process whose liveness a faults action requires: the
// sender (SendAppF), the receiver (RecvAppF, RecvMarkerF, DropMarker),
// the initiator (InitiateF), or the process acted on.
func (a Action) actor(cfg *Config) int {
	switch a.Kind {
	case ActSendAppF:
		return cfg.from[a.Chan]
	case ActRecvAppF, ActRecvMarkerF, ActDropMarker:
		return cfg.to[a.Chan]
	case ActInitiateF:
		return cfg.Initiator[a.Snap]
	}
	return a.Proc
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
