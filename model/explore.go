package model

import (
	"fmt"

	"github.com/markerwave/markerwave/model/engine"
	"github.com/markerwave/markerwave/spec"
)

// The liveness check (SnapshotsComplete) rests on the argument in the
// package documentation, "Liveness without a tableau".

// measure is the progress measure of the liveness argument above, ordered
// lexicographically in the order of its fields. recoveries, crashes,
// unsuspected and unaborted are constant in the fault-free
// specifications.
type measure struct {
	recoveries, crashes, budget, unrecorded, unsuspected, unaborted, msgs int
}

func progressMeasure(cfg *Config, st *State) measure {
	var m measure
	if cfg.Faults() {
		m.recoveries = cfg.MaxRecover - st.Inc
		m.crashes = cfg.MaxCrash - st.Crashes
		m.unsuspected = cfg.NumProcs() - st.Suspected.Len()
		for s := range cfg.Snap {
			if !Aborted(st, s) {
				m.unaborted++
			}
		}
	}
	for p, l := range st.Proc {
		m.budget += cfg.Budget[p] - l.Sent
	}
	for _, r := range st.Recorded {
		m.unrecorded += cfg.NumProcs() - r.Len()
	}
	for _, ms := range st.Chan {
		m.msgs += len(ms)
	}
	return m
}

func (a measure) less(b measure) bool {
	x := [...]int{a.recoveries, a.crashes, a.budget, a.unrecorded, a.unsuspected, a.unaborted, a.msgs}
	y := [...]int{b.recoveries, b.crashes, b.budget, b.unrecorded, b.unsuspected, b.unaborted, b.msgs}
	for i := range x {
		if x[i] != y[i] {
			return x[i] < y[i]
		}
	}
	return false
}

// Options tune Explore: workers, bounds, cancellation, progress (see
// engine.Options).
type Options = engine.Options

// Stats are the counts of a search so far, as TLC counts them.
type Stats = engine.Stats

// StopReason says why a search ended (see engine.StopReason).
type StopReason = engine.StopReason

// The reasons a search ends.
const (
	StopDone      = engine.StopDone
	StopMaxStates = engine.StopMaxStates
	StopMaxMemory = engine.StopMaxMemory
	StopCanceled  = engine.StopCanceled
)

// TraceStep is one state of a counterexample and the action that led to
// it (Label "" and Action nil for the initial state).
type TraceStep struct {
	Label  string
	Action *Action
	State  *State
}

// Violation is a property that fails, with its shortest counterexample.
type Violation struct {
	Kind     string        // engine.KindInvariant, KindProperty (temporal) or KindDeadlock
	Property spec.Property // the invariant or property ("" for deadlock)
	Detail   string        // e.g. which snapshot never completes
	Trace    []TraceStep
	Stutter  bool // the behaviour ends stuttering in its last state
}

// Result is what a run found, counted as TLC counts (see engine.Counts).
// The search passed only if Stop is StopDone and Violation is nil.
type Result struct {
	engine.Counts
	Violation *Violation
}

// Passed reports whether the search explored every reachable state and
// found no violation.
func (r *Result) Passed() bool { return r.Stop == StopDone && r.Violation == nil }

// Explore runs an exhaustive breadth-first search of cfg's state graph
// with the shared engine (model/engine), checking cfg.Invariants in every
// reachable state (in order) and cfg.Properties by the argument above. It
// stops at the first invariant violation (or deadlock, when
// cfg.CheckDeadlock), reporting a shortest counterexample; a liveness
// violation is reported after the search completes. The result,
// counterexamples included, does not depend on the number of workers.
// The bounds and the Stop channel of opt end it early (see Options).
func Explore(cfg *Config, opt Options) (*Result, error) {
	sp, err := newSearchSpec(cfg)
	if err != nil {
		return nil, err
	}
	r, err := engine.Run(sp, opt)
	if err != nil {
		return nil, err
	}
	res := &Result{Counts: r.Counts}
	if r.Violation != nil {
		if res.Violation, err = violation(cfg, r.Violation); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// searchSpec is cfg's state graph as the engine sees it (engine.Spec).
type searchSpec struct {
	cfg       *Config
	invs      []Invariant
	checkLive bool
}

func newSearchSpec(cfg *Config) (*searchSpec, error) {
	sp := &searchSpec{cfg: cfg, checkLive: len(cfg.Properties) > 0}
	for _, name := range cfg.Invariants {
		f, ok := invariantFuncs[name]
		if !ok {
			return nil, fmt.Errorf("model: unknown invariant %q", name)
		}
		sp.invs = append(sp.invs, f)
	}
	return sp, nil
}

// Init is the encoding of Init (tla/ChandyLamport.tla Init).
func (sp *searchSpec) Init() ([][]byte, error) { return [][]byte{Encode(sp.cfg, Init(sp.cfg))}, nil }

func (sp *searchSpec) CheckDeadlock() bool { return sp.cfg.CheckDeadlock }

func (sp *searchSpec) NewExpander() engine.Expander {
	return &expander{searchSpec: sp, buf: make([]byte, 0, 512)}
}

// expander is one worker's scratch space: the arena the state and its
// successors are decoded into, and the buffer successors are encoded in.
type expander struct {
	*searchSpec
	ar  arena
	buf []byte
}

// Expand decodes enc, checks the invariants and the liveness condition,
// and emits the successors in Next's order, asserting that each decreases
// the progress measure.
func (x *expander) Expand(enc []byte, emit func([]byte)) (engine.Verdict, error) {
	cfg := x.cfg
	var v engine.Verdict
	x.ar.reset() // the previous state and its successors are dead
	st, err := x.ar.decode(cfg, enc)
	if err != nil {
		return v, err
	}
	for i, f := range x.invs {
		if !f(cfg, st) {
			v.Invariant = cfg.Invariants[i]
			break
		}
	}
	if x.checkLive && !fairEnabled(cfg, st) {
		if prop, s := liveSnapshot(cfg, st); s >= 0 {
			v.Live = prop
		}
	}
	m0 := progressMeasure(cfg, st)
	forEachSuccessor(cfg, st, func(a Action, succ *State) {
		if err == nil && !progressMeasure(cfg, succ).less(m0) {
			err = fmt.Errorf("model: %s does not decrease the progress measure; the liveness argument does not apply", a.Label(cfg))
		}
		x.buf = AppendEncode(x.buf[:0], cfg, succ)
		emit(x.buf)
	})
	return v, err
}

// violation turns the engine's violation into a counterexample.
func violation(cfg *Config, ev *engine.Violation) (*Violation, error) {
	tr, err := rebuildTrace(cfg, ev.Path)
	if err != nil {
		return nil, err
	}
	v := &Violation{Kind: ev.Kind, Property: ev.Property, Trace: tr}
	if ev.Kind == engine.KindProperty {
		_, s := liveSnapshot(cfg, tr[len(tr)-1].State)
		v.Stutter, v.Detail = true, liveDetail(cfg, s)
	}
	return v, nil
}

// liveDetail says how the temporal property fails for snapshot index s at
// the state a fair behaviour ends in.
func liveDetail(cfg *Config, s int) string {
	if cfg.Faults() {
		return fmt.Sprintf("snapshot %d was initiated but is never complete or aborted: the last state has no fair action enabled", cfg.Snap[s])
	}
	return fmt.Sprintf("snapshot %d was initiated but never completes: the last state has no receive enabled", cfg.Snap[s])
}

// rebuildTrace rebuilds a counterexample's steps from its path of
// encodings (engine.RebuildPath, with Next's order of actions).
func rebuildTrace(cfg *Config, path [][]byte) ([]TraceStep, error) {
	states, actions, err := engine.RebuildPath(path,
		func(enc []byte) (*State, error) { return Decode(cfg, enc) },
		func(from *State, yield func(Action, string)) {
			forEachSuccessor(cfg, from, func(a Action, succ *State) { yield(a, Key(cfg, succ)) })
		})
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	tr := []TraceStep{{State: states[0]}}
	for k, a := range actions {
		tr = append(tr, TraceStep{Label: a.Label(cfg), Action: &a, State: states[k+1]})
	}
	return tr, nil
}
