package barrier

import (
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// Conjunct names an enabling conjunct of an action of
// tla/BarrierSnapshots.tla: the one found false when the action is not
// enabled.
type Conjunct uint8

const (
	// Enabled: every enabling conjunct holds.
	Enabled Conjunct = iota
	// NoSource: s \in Src, which the quantifier of NextV gives Emit and
	// InjectV.
	NoSource
	// NoEdge: e \in Edge, which the quantifier of NextV gives ProcessV and
	// RecvBarrierV.
	NoEdge
	// BudgetSpent: emitted[s] < Budget[s] (Emit).
	BudgetSpent
	// NoRoom: Room(e) (Emit) or Room(t) (ProcessV): the buffer is full.
	NoRoom
	// AlreadyRecorded: s \notin recorded (InjectV).
	AlreadyRecorded
	// EmptyQueue: q[e] # <<>> (ProcessV, RecvBarrierV).
	EmptyQueue
	// NotRecord: r.kind = "rec" (ProcessV).
	NotRecord
	// Blocked: ~(block /\ Mode = "aligned" /\ n \notin recorded /\ e \in
	// bar[n]) (ProcessV): the input is blocked by alignment.
	Blocked
	// NotBarrier: Head(q[e]).kind = "barrier" (RecvBarrierV).
	NotBarrier
	// NotComplete: Complete (Restore).
	NotComplete
	// AlreadyRestored: ~restored (Restore).
	AlreadyRestored
	// NoNonSrc: n \in NonSrc, which the quantifier of NextA gives
	// TimeoutV and TimeoutOutV (tla/BarrierAdaptive.tla lines 184-185).
	NoNonSrc
	// NotBlocked: bar[n] # {} (TimeoutV): no input of n is blocked.
	NotBlocked
	// AlreadySwitched: mode[n] = "aligned" (TimeoutV).
	AlreadySwitched
	// TimeoutsSpent: Cardinality(Switched) < MaxTimeouts (TimeoutV).
	TimeoutsSpent
	// FeedsForceAligned: Out(n) \cap ForceAligned = {} (TimeoutV).
	FeedsForceAligned
	// ForceAlignedPending: In(n) \cap ForceAligned \subseteq bar[n]
	// (TimeoutV).
	ForceAlignedPending
	// NotRecorded: n \in recorded (TimeoutOutV): n is still aligning.
	NotRecorded
	// NoNode: n \in Node, which the quantifier of NextA gives TimeoutOutV
	// (tla/BarrierAdaptive.tla line 185).
	NoNode
	// NothingQueued: Queued(n, honour) # {} (TimeoutOutV): no barrier of n
	// waits behind records on an output it may overtake.
	NothingQueued
)

const (
	modBarrier  = "BarrierSnapshots.tla"
	modAdaptive = "BarrierAdaptive.tla"
)

// conjunctText is each enabling conjunct of each action as
// tla/BarrierSnapshots.tla writes it.
var conjunctText = map[ActionKind]map[Conjunct]spec.Quote{
	ActEmit: {
		NoSource:    {TLA: "s \\in Src", Module: modBarrier, Line: 283},
		BudgetSpent: {TLA: "emitted[s] < Budget[s]", Module: modBarrier, Line: 172},
		NoRoom:      {TLA: "Room(e)", Module: modBarrier, Line: 173},
	},
	ActInject: {
		NoSource:        {TLA: "s \\in Src", Module: modBarrier, Line: 284},
		AlreadyRecorded: {TLA: "s \\notin recorded", Module: modBarrier, Line: 231},
	},
	ActProcess: {
		NoEdge:     {TLA: "e \\in Edge", Module: modBarrier, Line: 285},
		EmptyQueue: {TLA: "q[e] # <<>>", Module: modBarrier, Line: 191},
		NotRecord:  {TLA: "r.kind = \"rec\"", Module: modBarrier, Line: 192},
		Blocked:    {TLA: "~(block /\\ Mode = \"aligned\" /\\ n \\notin recorded /\\ e \\in bar[n])", Module: modBarrier, Line: 193},
		NoRoom:     {TLA: "Room(t)", Module: modBarrier, Line: 198},
	},
	ActRecvBarrier: {
		NoEdge:     {TLA: "e \\in Edge", Module: modBarrier, Line: 286},
		EmptyQueue: {TLA: "q[e] # <<>>", Module: modBarrier, Line: 245},
		NotBarrier: {TLA: "Head(q[e]).kind = \"barrier\"", Module: modBarrier, Line: 246},
	},
	ActRestore: {
		NotComplete:     {TLA: "Complete", Module: modBarrier, Line: 266},
		AlreadyRestored: {TLA: "~restored", Module: modBarrier, Line: 267},
	},
	ActTimeout: {
		NoNonSrc:            {TLA: "n \\in NonSrc", Module: modAdaptive, Line: 184},
		AlreadyRecorded:     {TLA: "IF late THEN TRUE ELSE n \\notin recorded", Module: modAdaptive, Line: 108},
		NotBlocked:          {TLA: "bar[n] # {}", Module: modAdaptive, Line: 109},
		AlreadySwitched:     {TLA: "mode[n] = \"aligned\"", Module: modAdaptive, Line: 110},
		TimeoutsSpent:       {TLA: "Cardinality(Switched) < MaxTimeouts", Module: modAdaptive, Line: 111},
		FeedsForceAligned:   {TLA: "Out(n) \\cap ForceAligned = {}", Module: modAdaptive, Line: 112},
		ForceAlignedPending: {TLA: "In(n) \\cap ForceAligned \\subseteq bar[n]", Module: modAdaptive, Line: 113},
	},
	ActTimeoutOut: {
		NoNode:          {TLA: "n \\in Node", Module: modAdaptive, Line: 185},
		NotRecorded:     {TLA: "n \\in recorded", Module: modAdaptive, Line: 161},
		AlreadySwitched: {TLA: "mode[n] = \"aligned\"", Module: modAdaptive, Line: 162},
		TimeoutsSpent:   {TLA: "Cardinality(Switched) < MaxTimeouts", Module: modAdaptive, Line: 163},
		NothingQueued:   {TLA: "E # {}", Module: modAdaptive, Line: 164},
	},
}

// Source returns where conjunct k of action kind is written.
func (k Conjunct) Source(kind ActionKind) spec.Quote { return conjunctText[kind][k] }

// NotEnabled is the error Action.Apply returns when the action is not
// enabled: which instance, which conjunct of its definition is false (and
// where the .tla writes it), and what the state holds instead. It has the
// shape of model.NotEnabled.
type NotEnabled struct {
	Action   string
	Conjunct Conjunct
	Source   spec.Quote
	Why      string
}

func (e *NotEnabled) Error() string {
	return fmt.Sprintf("%s is not enabled: %s (%s)", e.Action, e.Why, e.Source)
}

// bound checks the quantifier of NextV: the instance names a source or
// an edge of the model.
func (cfg *Config) bound(a Action) Conjunct {
	switch a.Kind {
	case ActEmit, ActInject:
		if a.Node < 0 || a.Node >= len(cfg.Nodes) || cfg.Kind[a.Node] != Source {
			return NoSource
		}
	case ActProcess, ActRecvBarrier:
		if a.Edge < 0 || a.Edge >= len(cfg.Edges) {
			return NoEdge
		}
	case ActTimeout, ActTimeoutOut:
		return cfg.timeoutBound(a)
	}
	return Enabled
}

// unboundLabel and unboundWhy describe an instance that names no source
// or edge of the model.
func (cfg *Config) unboundLabel(a Action) string {
	switch a.Kind {
	case ActEmit:
		return fmt.Sprintf("Emit(node %d)", a.Node)
	case ActInject:
		return fmt.Sprintf("InjectV(node %d)", a.Node)
	case ActProcess:
		return fmt.Sprintf("ProcessV(edge %d)", a.Edge)
	case ActTimeout:
		return fmt.Sprintf("TimeoutV(node %d)", a.Node)
	case ActTimeoutOut:
		return fmt.Sprintf("TimeoutOutV(node %d)", a.Node)
	}
	return fmt.Sprintf("RecvBarrierV(edge %d)", a.Edge)
}

func (cfg *Config) unboundWhy(a Action, k Conjunct) string {
	if k == NoNonSrc || k == NoNode {
		return cfg.noNonSrcWhy(a.Node)
	}
	if k == NoSource {
		if a.Node >= 0 && a.Node < len(cfg.Nodes) {
			return fmt.Sprintf("%s is not a source", cfg.Nodes[a.Node])
		}
		return fmt.Sprintf("the model has no node %d", a.Node)
	}
	return fmt.Sprintf("the model has no edge %d (it has %d)", a.Edge, len(cfg.Edges))
}

// edgeWhyFormat is notEnabled's words for the conjuncts about an edge's
// head.
var edgeWhyFormat = map[Conjunct]string{
	EmptyQueue: "%s is empty",
	NotRecord:  "the head of %s is a barrier",
	NotBarrier: "the head of %s is a record",
}

// nodeWhy says what the state holds instead of conjunct k of a node's
// step: a source's budget, a full buffer, a recording already done.
func nodeWhy(cfg *Config, st *State, a Action, k Conjunct) string {
	name := cfg.Nodes[a.Node]
	switch {
	case k == BudgetSpent:
		return fmt.Sprintf("%s has emitted its budget (emitted[%s] = %d, Budget[%s] = %d)", name, name, st.Emitted[a.Node], name, cfg.Budget[a.Node])
	case k == AlreadyRecorded && a.Kind == ActTimeout:
		return fmt.Sprintf("%s has already recorded", name)
	case k == AlreadyRecorded:
		return fmt.Sprintf("%s has already injected its barrier", name)
	}
	t := cfg.fwdOut[a.Node]
	if a.Kind == ActProcess {
		t = cfg.route(cfg.Edges[a.Edge][1], st.Q[a.Edge][0].Hops)
	}
	return fmt.Sprintf("the buffer of %s is full (%d items, Cap = %d): backpressure", cfg.EdgeName(t), len(st.Q[t]), cfg.Cap)
}

// notEnabled explains why instance a is not enabled in st, given the
// conjunct step found false.
func notEnabled(cfg *Config, st *State, a Action, k Conjunct) *NotEnabled {
	e := &NotEnabled{Action: a.Named(cfg), Conjunct: k, Source: k.Source(a.Kind)}
	switch k {
	case BudgetSpent, NoRoom, AlreadyRecorded:
		e.Why = nodeWhy(cfg, st, a, k)
	case EmptyQueue, NotRecord, NotBarrier:
		e.Why = fmt.Sprintf(edgeWhyFormat[k], cfg.EdgeName(a.Edge))
	case Blocked:
		e.Why = fmt.Sprintf("%s is blocked: its barrier has arrived and %s has not recorded (alignment)", cfg.EdgeName(a.Edge), cfg.Nodes[cfg.Edges[a.Edge][1]])
	case NotComplete:
		e.Why = "the snapshot is not complete"
	case AlreadyRestored:
		e.Why = "the graph has already been restored"
	default:
		e.Why = timeoutWhy(cfg, st, a.Node, k)
	}
	return e
}
