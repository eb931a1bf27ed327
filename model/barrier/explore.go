package barrier

import (
	"fmt"
	"slices"

	"github.com/markerwave/markerwave/model/engine"
	"github.com/markerwave/markerwave/spec"
)

// measure is the progress measure of the liveness argument in doc.go,
// ordered lexicographically in the order of its fields.
type measure [6]int

func progressMeasure(cfg *Config, st *State) measure {
	var m measure
	if !st.Restored {
		m[0] = 1
	}
	m[1] = cfg.toEmit(st)
	m[3], m[4] = cfg.inFlight(st)
	for n := range cfg.Nodes {
		bit := uint64(1) << n
		m[2] += count(st.Recorded&bit == 0)
		m[5] += count(st.Switched&bit == 0)
	}
	return m
}

// count is 1 for true, 0 for false.
func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// toEmit is the records the sources have yet to emit.
func (cfg *Config) toEmit(st *State) int {
	n := 0
	for s, k := range cfg.Kind {
		if k == Source {
			n += cfg.Budget[s] - st.Emitted[s]
		}
	}
	return n
}

// inFlight is the ProcessV steps the queued records still need to reach
// the sink, and the barriers queued.
func (cfg *Config) inFlight(st *State) (steps, barriers int) {
	for e, q := range st.Q {
		for _, it := range q {
			if it.Barrier {
				barriers++
			} else {
				steps += cfg.pathLen(e, it.Hops)
			}
		}
	}
	return steps, barriers
}

// pathLen is the number of ProcessV steps that take a record with hops
// on edge e to the sink.
func (cfg *Config) pathLen(e, hops int) int {
	n := 0
	for {
		n++
		to := cfg.Edges[e][1]
		if to == cfg.snk {
			return n
		}
		e = cfg.route(to, hops)
		if cfg.Back[e] {
			hops++
		}
	}
}

func (a measure) less(b measure) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// TraceStep is one state of a counterexample and the action that led to
// it (Label "" and Action nil for the initial state).
type TraceStep struct {
	Label  string
	Action *Action
	State  *State
}

// Violation is a property that fails, with its shortest counterexample.
type Violation struct {
	Kind     string        // engine.KindInvariant, KindProperty or KindDeadlock
	Property spec.Property // "" for a deadlock
	Trace    []TraceStep
	Stutter  bool // the behaviour ends stuttering in its last state
}

// Result is what Explore found, counted as TLC counts (engine.Counts).
type Result struct {
	engine.Counts
	Violation *Violation
}

// Passed reports whether the search explored every reachable state and
// found no violation.
func (r *Result) Passed() bool { return r.Stop == engine.StopDone && r.Violation == nil }

// Explore searches cfg's state graph with the shared engine
// (model/engine), checking cfg.Invariants in every state, in order, and
// BarriersComplete, when cfg.Properties names it, by the argument of
// doc.go. It stops at the first invariant violation with a shortest
// counterexample.
func Explore(cfg *Config, opt engine.Options) (*Result, error) {
	sp := &searchSpec{cfg: cfg, checkLive: slices.Contains(cfg.Properties, spec.PropBarriersComplete)}
	for _, p := range cfg.Invariants {
		f, ok := invariantFuncs[p]
		if !ok {
			return nil, fmt.Errorf("barrier: unknown invariant %s", p)
		}
		sp.invs = append(sp.invs, f)
	}
	r, err := engine.Run(sp, opt)
	if err != nil {
		return nil, err
	}
	res := &Result{Counts: r.Counts}
	if ev := r.Violation; ev != nil {
		tr, err := rebuildTrace(cfg, ev.Path)
		if err != nil {
			return nil, err
		}
		res.Violation = &Violation{Kind: ev.Kind, Property: ev.Property, Trace: tr, Stutter: ev.Kind == engine.KindProperty}
	}
	return res, nil
}

// searchSpec is cfg's state graph as the engine sees it (engine.Spec).
type searchSpec struct {
	cfg       *Config
	invs      []Invariant
	checkLive bool
}

func (sp *searchSpec) Init() ([][]byte, error) {
	return [][]byte{AppendEncode(nil, Init(sp.cfg))}, nil
}

func (sp *searchSpec) CheckDeadlock() bool { return sp.cfg.CheckDeadlock }

func (sp *searchSpec) NewExpander() engine.Expander { return &expander{searchSpec: sp} }

type expander struct {
	*searchSpec
	buf []byte
}

// Expand decodes enc, checks the invariants and the liveness condition,
// and emits the successors in Next's order, asserting, when it checks
// liveness, that each decreases the progress measure (the argument it
// rests on; a broken protocol need not keep it: a timeout after
// recording sends a second barrier).
func (x *expander) Expand(enc []byte, emit func([]byte)) (engine.Verdict, error) {
	var v engine.Verdict
	cfg := x.cfg
	st, err := Decode(cfg, enc)
	if err != nil {
		return v, err
	}
	for i, f := range x.invs {
		if !f(cfg, st) {
			v.Invariant = cfg.Invariants[i]
			break
		}
	}
	if x.checkLive && liveViolated(cfg, st) {
		v.Live = spec.PropBarriersComplete
	}
	m0 := progressMeasure(cfg, st)
	for _, s := range Next(cfg, st) {
		if x.checkLive && !progressMeasure(cfg, s.State).less(m0) {
			return v, fmt.Errorf("barrier: %s does not decrease the progress measure; the liveness argument does not apply", s.Action.Label(cfg))
		}
		x.buf = AppendEncode(x.buf[:0], s.State)
		emit(x.buf)
	}
	return v, nil
}

// rebuildTrace rebuilds a counterexample's steps from its path of
// encodings (engine.RebuildPath, with Next's order of actions).
func rebuildTrace(cfg *Config, path [][]byte) ([]TraceStep, error) {
	states, actions, err := engine.RebuildPath(path,
		func(enc []byte) (*State, error) { return Decode(cfg, enc) },
		func(from *State, yield func(Action, string)) {
			for _, s := range Next(cfg, from) {
				yield(s.Action, Key(s.State))
			}
		})
	if err != nil {
		return nil, fmt.Errorf("barrier: %w", err)
	}
	tr := []TraceStep{{State: states[0]}}
	for k, a := range actions {
		tr = append(tr, TraceStep{Label: a.Label(cfg), Action: &a, State: states[k+1]})
	}
	return tr, nil
}
