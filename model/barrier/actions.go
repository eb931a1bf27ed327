package barrier

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// This file mirrors the actions of tla/BarrierSnapshots.tla (lines
// 147-304), definition by definition; line numbers refer to it. Every
// action takes the current state and returns the successor, or the first
// enabling conjunct that is false; it never modifies its input.

// InitApp mirrors InitApp (lines 119-120).
func InitApp(cfg *Config) App {
	n := len(cfg.Nodes)
	return App{OK: true, Emitted: make([]int, n), Cnt: make([]int, n),
		Out: make([]int, cfg.numKeys), Q: make([][]Item, len(cfg.Edges))}
}

// Init mirrors Init (lines 149-166): the single initial state; for an
// adaptive model InitA too (tla/BarrierAdaptive.tla lines 74-78: every
// mode "aligned", nothing reported, cutAligned FALSE, the zero values).
func Init(cfg *Config) *State {
	n, e, k := len(cfg.Nodes), len(cfg.Edges), cfg.numKeys
	return &State{
		Emitted: make([]int, n), Q: make([][]Item, e), Cnt: make([]int, n), Out: make([]int, k),
		Bar: make([]uint64, n), RecOff: make([]int, n), RecCnt: make([]int, n), RecOut: make([]int, k),
		RecChan: make([]Status, e), RecQ: make([][]Item, e),
		NSent: make([]int, e), NRcvd: make([]int, e), CutSent: make([]int, e), CutRcvd: make([]int, e),
		Pre: InitApp(cfg), Reported: make([]SnapType, n),
	}
}

// RecordedApp mirrors RecordedApp (line 121).
func RecordedApp(st *State) App {
	return App{OK: true, Emitted: st.RecOff, Cnt: st.RecCnt, Out: st.RecOut, Q: st.RecQ}
}

// Complete mirrors Complete (line 123).
func Complete(cfg *Config, st *State) bool {
	if bits.OnesCount64(st.Recorded) != len(cfg.Nodes) {
		return false
	}
	for _, s := range st.RecChan {
		if s != Done {
			return false
		}
	}
	return true
}

// Injected mirrors Injected (line 124): some source has recorded.
func Injected(cfg *Config, st *State) bool {
	for s, k := range cfg.Kind {
		if k == Source && st.Has(s) {
			return true
		}
	}
	return false
}

// Terminated mirrors Terminated (lines 125-126).
func Terminated(cfg *Config, st *State) bool {
	for s, k := range cfg.Kind {
		if k == Source && st.Emitted[s] != cfg.Budget[s] {
			return false
		}
	}
	for _, q := range st.Q {
		if len(q) != 0 {
			return false
		}
	}
	return true
}

// room mirrors Room(e) (line 131).
func room(cfg *Config, st *State, e int) bool {
	return cfg.Back[e] || len(st.Q[e]) < cfg.Cap
}

// fwd mirrors Fwd(r, e, k) (line 91).
func fwd(cfg *Config, r Item, e, k int) Item {
	if cfg.Back[e] {
		r.Hops++
	}
	r.ESeq = k
	return r
}

// shadowEmit mirrors ShadowEmit (lines 136-139) on sh in place.
func shadowEmit(cfg *Config, sh *App, s, e int, r Item) {
	if sh.Emitted[s] < cfg.Budget[s] {
		sh.Emitted[s]++
		sh.Q[e] = append(sh.Q[e], r)
		return
	}
	sh.OK = false
}

// shadowProcess mirrors ShadowProcess (lines 141-146) on sh in place.
func shadowProcess(cfg *Config, sh *App, e int, r Item, t int, r2 Item) {
	if len(sh.Q[e]) == 0 || sh.Q[e][0] != r {
		sh.OK = false
		return
	}
	n := cfg.Edges[e][1]
	sh.Q[e] = sh.Q[e][1:]
	sh.Cnt[n]++
	if n == cfg.snk {
		sh.Out[cfg.key(r.Src, r.I)]++
	} else {
		sh.Q[t] = append(slices.Clip(sh.Q[t]), r2)
	}
}

// emit mirrors Emit(s) (lines 169-179).
func emit(cfg *Config, st *State, s int) (*State, Conjunct) {
	e := cfg.fwdOut[s]
	if st.Emitted[s] >= cfg.Budget[s] {
		return nil, BudgetSpent
	}
	if !room(cfg, st, e) {
		return nil, NoRoom
	}
	r := Item{Src: s, I: st.Emitted[s] + 1, ESeq: st.NSent[e] + 1}
	n := st.Clone()
	n.Emitted[s]++
	n.Q[e] = append(n.Q[e], r)
	n.NSent[e]++
	if !st.Has(s) {
		shadowEmit(cfg, &n.Pre, s, e, r)
	}
	return n, Enabled
}

// process mirrors ProcessV(e, block, log) (lines 186-208), conjunct by
// conjunct: a literal mirror of the definition, left whole on purpose.
func process(cfg *Config, st *State, e int, block, log bool) (*State, Conjunct) {
	n := cfg.Edges[e][1]
	if len(st.Q[e]) == 0 {
		return nil, EmptyQueue
	}
	r := st.Q[e][0]
	if r.Barrier {
		return nil, NotRecord
	}
	if block && cfg.Mode == Aligned && !st.Has(n) && st.Bar[n]&(1<<e) != 0 {
		return nil, Blocked
	}
	t, r2 := -1, Item{}
	if n != cfg.snk {
		t = cfg.route(n, r.Hops)
		if !room(cfg, st, t) {
			return nil, NoRoom
		}
		r2 = fwd(cfg, r, t, st.NSent[t]+1)
	}
	ns := st.Clone()
	ns.Q[e] = ns.Q[e][1:]
	if n == cfg.snk {
		ns.Out[cfg.key(r.Src, r.I)]++
	} else {
		ns.Q[t] = append(ns.Q[t], r2)
		ns.NSent[t]++
	}
	ns.Cnt[n]++
	ns.NRcvd[e]++
	if log && st.RecChan[e] == Recording {
		ns.RecQ[e] = append(ns.RecQ[e], r)
	}
	if !st.Has(n) {
		shadowProcess(cfg, &ns.Pre, e, r, t, r2)
	}
	return ns, Enabled
}

// recordNode mirrors RecordNode(n) (lines 211-218): ns is the successor
// being built from st.
func recordNode(cfg *Config, st, ns *State, n int) {
	ns.Recorded |= 1 << n
	switch cfg.Kind[n] {
	case Source:
		ns.RecOff[n] = st.Emitted[n]
	case Sink:
		ns.RecCnt[n] = st.Cnt[n]
		ns.RecOut = slices.Clone(st.Out)
	default:
		ns.RecCnt[n] = st.Cnt[n]
	}
	for _, e := range cfg.out[n] {
		ns.CutSent[e] = st.NSent[e]
	}
	for _, e := range cfg.in[n] {
		ns.CutRcvd[e] = st.NRcvd[e]
	}
}

// sendBarriers mirrors SendBarriers(n, qs, persist, m) (lines 222-227),
// qs being ns.Q before the barriers are sent.
func sendBarriers(cfg *Config, ns *State, n int, persist bool, m Mode) {
	for _, e := range cfg.out[n] {
		if m == Aligned {
			ns.Q[e] = append(ns.Q[e], Item{Barrier: true})
			continue
		}
		if persist {
			ns.RecQ[e] = append(ns.RecQ[e], ns.Q[e]...)
		}
		ns.Q[e] = append([]Item{{Barrier: true}}, ns.Q[e]...)
	}
}

// inject mirrors InjectV(s, persist) (lines 230-234).
func inject(cfg *Config, st *State, s int, persist bool) (*State, Conjunct) {
	if st.Has(s) {
		return nil, AlreadyRecorded
	}
	ns := st.Clone()
	recordNode(cfg, st, ns, s)
	sendBarriers(cfg, ns, s, persist, cfg.Mode)
	return ns, Enabled
}

// recvBarrier mirrors RecvBarrierV(e, persist, cyclic) (lines 241-260).
func recvBarrier(cfg *Config, st *State, e int, persist, cyclic bool) (*State, Conjunct) {
	n := cfg.Edges[e][1]
	if len(st.Q[e]) == 0 {
		return nil, EmptyQueue
	}
	if !st.Q[e][0].Barrier {
		return nil, NotBarrier
	}
	b := st.Bar[n] | 1<<e
	ns := st.Clone()
	ns.Bar[n] = b
	ns.Q[e] = ns.Q[e][1:]
	switch {
	case st.Has(n):
		ns.RecChan[e] = Done
	case cfg.Mode == Unaligned || cfg.aligned(n, b, cyclic):
		recordNode(cfg, st, ns, n)
		startRecording(cfg, ns, n, b)
		sendBarriers(cfg, ns, n, persist, cfg.Mode)
	}
	return ns, Enabled
}

// startRecording mirrors the recChan' of RecvBarrierV (lines 254-256),
// which TimeoutV repeats (tla/BarrierAdaptive.tla lines 115-117): n's
// inputs in b, whose barrier has arrived, are done, the others start
// recording.
func startRecording(cfg *Config, ns *State, n int, b uint64) {
	for _, d := range cfg.in[n] {
		if b&(1<<d) != 0 {
			ns.RecChan[d] = Done
		} else {
			ns.RecChan[d] = Recording
		}
	}
}

// aligned reports (IF cyclic THEN InF(n) ELSE In(n)) \subseteq b (line
// 252).
func (cfg *Config) aligned(n int, b uint64, cyclic bool) bool {
	for _, d := range cfg.in[n] {
		if !(cyclic && cfg.Back[d]) && b&(1<<d) == 0 {
			return false
		}
	}
	return true
}

// restore mirrors Restore (lines 265-275).
func restore(cfg *Config, st *State) (*State, Conjunct) {
	if !Complete(cfg, st) {
		return nil, NotComplete
	}
	if st.Restored {
		return nil, AlreadyRestored
	}
	ns := st.Clone()
	ns.Restored = true
	ns.Emitted = slices.Clone(st.RecOff)
	ns.Cnt = slices.Clone(st.RecCnt)
	ns.Out = slices.Clone(st.RecOut)
	ns.Q = cloneQ(st.RecQ)
	ns.NSent = slices.Clone(st.CutSent)
	ns.NRcvd = slices.Clone(st.CutRcvd)
	return ns, Enabled
}

// ActionKind names an action of tla/BarrierSnapshots.tla.
type ActionKind uint8

// The actions, in the order of NextV's disjuncts (lines 282-287).
const (
	ActEmit        ActionKind = iota // Emit(s), line 169
	ActInject                        // InjectV(s, persist), line 230
	ActProcess                       // ProcessV(e, block, log), line 186
	ActRecvBarrier                   // RecvBarrierV(e, persist, cyclic), line 241
	ActRestore                       // Restore, line 265
	// ActTimeout is TimeoutV(n, ...) of tla/BarrierAdaptive.tla (line 107),
	// NextA's fifth disjunct (line 184), before RestoreA.
	ActTimeout
	// ActTimeoutOut is TimeoutOutV(n, ...) of tla/BarrierAdaptive.tla
	// (line 159), NextA's sixth disjunct (line 185), before RestoreA.
	ActTimeoutOut
)

// Action is one instance of an action: Node for Emit, Inject, Timeout and TimeoutOut, Edge for
// Process and RecvBarrier. The variant's flags (block, log, persist,
// cyclic) come from the Config.
type Action struct {
	Kind ActionKind
	Node int
	Edge int
}

func tlaBool(b bool) string {
	if b {
		return "TRUE"
	}
	return "FALSE"
}

// Label renders the instance as TLC prints it in a trace, e.g.
// ProcessV(<<"S1", "X">>,TRUE,TRUE).
func (a Action) Label(cfg *Config) string {
	name, params := a.params(cfg)
	vals := make([]string, len(params))
	for i, p := range params {
		vals[i] = p[1]
	}
	return call(name, vals, ",")
}

// Named renders the instance with the parameters named as
// tla/BarrierSnapshots.tla names them, for people, e.g.
// ProcessV(e = <<"S1", "X">>, block = TRUE, log = TRUE).
func (a Action) Named(cfg *Config) string {
	name, params := a.params(cfg)
	args := make([]string, len(params))
	for i, p := range params {
		args[i] = p[0] + " = " + p[1]
	}
	return call(name, args, ", ")
}

// call is name(args) joined by sep; Restore has no parentheses.
func call(name string, args []string, sep string) string {
	if len(args) == 0 {
		return name
	}
	return name + "(" + strings.Join(args, sep) + ")"
}

// params is the operator a instantiates and its parameters, each its name
// in the spec and its value: Emit(s) (line 169), InjectV(s, persist)
// (line 230), ProcessV(e, block, log) (line 186), RecvBarrierV(e,
// persist, cyclic) (line 241), Restore (line 265), the booleans the
// variant's (NextV, lines 282-286).
func (a Action) params(cfg *Config) (string, [][2]string) {
	if cfg.Variant.Adaptive() {
		return a.adaptiveParams(cfg)
	}
	block, log, persist, cyclic := cfg.Variant.flags()
	switch a.Kind {
	case ActEmit:
		return "Emit", [][2]string{{"s", fmt.Sprintf("%q", cfg.Nodes[a.Node])}}
	case ActInject:
		return "InjectV", [][2]string{{"s", fmt.Sprintf("%q", cfg.Nodes[a.Node])}, {"persist", tlaBool(persist)}}
	case ActProcess:
		return "ProcessV", [][2]string{{"e", cfg.EdgeName(a.Edge)}, {"block", tlaBool(block)}, {"log", tlaBool(log)}}
	case ActRecvBarrier:
		return "RecvBarrierV", [][2]string{{"e", cfg.EdgeName(a.Edge)}, {"persist", tlaBool(persist)}, {"cyclic", tlaBool(cyclic)}}
	}
	return "Restore", nil
}

// step computes a's successor of st, or the false conjunct.
func step(cfg *Config, st *State, a Action) (*State, Conjunct) {
	block, log, persist, cyclic := cfg.Variant.flags()
	switch a.Kind {
	case ActEmit:
		return emit(cfg, st, a.Node)
	case ActInject:
		return inject(cfg, st, a.Node, persist)
	case ActProcess:
		return process(cfg, st, a.Edge, block, log)
	case ActRecvBarrier:
		if cfg.Variant.Adaptive() {
			return recvBarrierA(cfg, st, a.Edge)
		}
		return recvBarrier(cfg, st, a.Edge, persist, cyclic)
	case ActTimeout:
		return timeout(cfg, st, a.Node)
	case ActTimeoutOut:
		return timeoutOut(cfg, st, a.Node)
	}
	return restore(cfg, st)
}

// Apply returns a's successor of st, or a *NotEnabled naming the false
// conjunct (the quantifier's, when a names no source or no edge).
func (a Action) Apply(cfg *Config, st *State) (*State, error) {
	if k := cfg.bound(a); k != Enabled {
		return nil, &NotEnabled{Action: cfg.unboundLabel(a), Conjunct: k, Source: k.Source(a.Kind), Why: cfg.unboundWhy(a, k)}
	}
	ns, k := step(cfg, st, a)
	if k != Enabled {
		return nil, notEnabled(cfg, st, a, k)
	}
	return ns, nil
}

// Actions lists every instance of NextV's disjuncts (lines 282-287), in
// order: Emit and InjectV per source, ProcessV and RecvBarrierV per edge,
// (adaptive: TimeoutV per node that is not a source, then TimeoutOutV
// per node, tla/BarrierAdaptive.tla lines 184-185), Restore.
func (cfg *Config) Actions() []Action {
	var as []Action
	for _, kind := range []ActionKind{ActEmit, ActInject} {
		for s, k := range cfg.Kind {
			if k == Source {
				as = append(as, Action{Kind: kind, Node: s})
			}
		}
	}
	for _, kind := range []ActionKind{ActProcess, ActRecvBarrier} {
		for e := range cfg.Edges {
			as = append(as, Action{Kind: kind, Edge: e})
		}
	}
	if cfg.Variant.Adaptive() {
		as = cfg.appendTimeouts(as)
	}
	return append(as, Action{Kind: ActRestore})
}

// appendTimeouts appends NextA's timeouts (tla/BarrierAdaptive.tla lines
// 184-185): TimeoutV per node that is not a source, TimeoutOutV per node.
func (cfg *Config) appendTimeouts(as []Action) []Action {
	for n, k := range cfg.Kind {
		if k != Source {
			as = append(as, Action{Kind: ActTimeout, Node: n})
		}
	}
	for n := range cfg.Kind {
		as = append(as, Action{Kind: ActTimeoutOut, Node: n})
	}
	return as
}

// Step is a successor and the action instance that leads to it.
type Step struct {
	Action Action
	State  *State
}

// Next mirrors Next (line 296), NextV (line 282) for cfg's variant: every enabled instance
// and its successor, in the order of Actions.
func Next(cfg *Config, st *State) []Step {
	var out []Step
	for _, a := range cfg.Actions() {
		if ns, k := step(cfg, st, a); k == Enabled {
			out = append(out, Step{a, ns})
		}
	}
	return out
}

// fairEnabled reports whether an action FairnessV (lines 292-294) makes
// weakly fair is enabled in st: InjectV, ProcessV or RecvBarrierV (a
// timeout needs no fairness: FairnessA, tla/BarrierAdaptive.tla lines
// 190-192).
func fairEnabled(cfg *Config, st *State) bool {
	for _, a := range cfg.Actions() {
		if a.Kind == ActEmit || a.Kind == ActRestore || a.Kind == ActTimeout || a.Kind == ActTimeoutOut {
			continue
		}
		if _, k := step(cfg, st, a); k == Enabled {
			return true
		}
	}
	return false
}
