package model

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// SimOptions tune Simulate, like TLC -simulate: Traces random behaviours
// of at most Depth states each, from the generator seeded with Seed.
type SimOptions struct {
	Seed   uint64
	Traces int // 0: 1000
	Depth  int // 0: 100
	// Stop, when closed, ends the simulation after the behaviour under
	// way (SimResult.Canceled).
	Stop <-chan struct{}
}

// SimResult is what Simulate found. States counts every state visited
// (initial states included); Generated every successor computed.
type SimResult struct {
	Traces    int
	States    int64
	Generated int64
	MaxLen    int
	Violation *Violation
	Duration  time.Duration
	// Canceled: Stop ended the simulation before Traces behaviours.
	Canceled bool
}

// Simulate checks cfg's invariants along random behaviours: each starts
// in the initial state and takes a successor chosen uniformly among the
// enabled action instances until Depth states or no action is enabled.
// SnapshotsComplete, when asked, is checked by the explorer's argument: a
// visited state with no fair action enabled is the end of a fair
// behaviour (it may stutter there forever), so every initiated snapshot
// must be complete in it. The same seed gives the same behaviours.
func Simulate(cfg *Config, opt SimOptions) (*SimResult, error) {
	start := time.Now()
	opt.Traces, opt.Depth = orDefault(opt.Traces, 1000), orDefault(opt.Depth, 100)
	invs, err := invariantsOf(cfg)
	if err != nil {
		return nil, err
	}
	sim := &simulation{cfg: cfg, opt: opt, invs: invs, res: &SimResult{},
		rng: rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x9e3779b97f4a7c15))}
	for t := 0; t < opt.Traces && sim.res.Violation == nil; t++ {
		if stopped(opt.Stop) {
			sim.res.Canceled = true
			break
		}
		sim.behaviour()
	}
	sim.res.Duration = time.Since(start)
	return sim.res, nil
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// invariantsOf is cfg's invariants as functions.
func invariantsOf(cfg *Config) ([]Invariant, error) {
	invs := make([]Invariant, len(cfg.Invariants))
	for i, name := range cfg.Invariants {
		f, ok := invariantFuncs[name]
		if !ok {
			return nil, fmt.Errorf("model: unknown invariant %q", name)
		}
		invs[i] = f
	}
	return invs, nil
}

// simulation is a run of Simulate: the behaviours drawn so far.
type simulation struct {
	cfg   *Config
	opt   SimOptions
	invs  []Invariant
	rng   *rand.Rand
	res   *SimResult
	succs []Transition
}

// behaviour draws one behaviour from Init, a successor picked at random
// at each step, until the depth, a state with no successor or a
// violation (then in res).
func (sim *simulation) behaviour() {
	cfg := sim.cfg
	sim.res.Traces++
	trace := []TraceStep{{State: Init(cfg)}}
	for {
		st := trace[len(trace)-1].State
		sim.res.States++
		if sim.res.Violation = sim.violation(trace, st); sim.res.Violation != nil || len(trace) >= sim.opt.Depth {
			break
		}
		pick, ok := sim.pick(st)
		if !ok {
			if cfg.CheckDeadlock {
				sim.res.Violation = &Violation{Kind: "deadlock", Trace: trace}
			}
			break
		}
		a := pick.Action
		trace = append(trace, TraceStep{Label: a.Label(cfg), Action: &a, State: pick.State})
	}
	if sim.res.Violation == nil { // a violation's behaviour is in it, not counted
		sim.res.MaxLen = max(sim.res.MaxLen, len(trace))
	}
}

// violation is the invariant st violates or, when the model checks
// properties and st ends a fair behaviour, the snapshot it leaves
// incomplete; nil if none.
func (sim *simulation) violation(trace []TraceStep, st *State) *Violation {
	cfg := sim.cfg
	for i, f := range sim.invs {
		if !f(cfg, st) {
			return &Violation{Kind: "invariant", Property: cfg.Invariants[i], Trace: trace}
		}
	}
	if len(cfg.Properties) > 0 && !fairEnabled(cfg, st) {
		if prop, s := liveSnapshot(cfg, st); s >= 0 {
			return &Violation{Kind: "property", Property: prop, Trace: trace, Stutter: true, Detail: liveDetail(cfg, s)}
		}
	}
	return nil
}

// pick draws one of st's successors, false if it has none.
func (sim *simulation) pick(st *State) (Transition, bool) {
	sim.succs = sim.succs[:0]
	forEachSuccessor(sim.cfg, st, func(a Action, n *State) {
		sim.succs = append(sim.succs, Transition{Action: a, State: n})
	})
	sim.res.Generated += int64(len(sim.succs))
	if len(sim.succs) == 0 {
		return Transition{}, false
	}
	return sim.succs[sim.rng.IntN(len(sim.succs))], true
}

// stopped reports whether stop is closed (a nil stop never is).
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
