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
	if opt.Traces <= 0 {
		opt.Traces = 1000
	}
	if opt.Depth <= 0 {
		opt.Depth = 100
	}
	invs := make([]Invariant, len(cfg.Invariants))
	for i, name := range cfg.Invariants {
		f, ok := invariantFuncs[name]
		if !ok {
			return nil, fmt.Errorf("model: unknown invariant %q", name)
		}
		invs[i] = f
	}
	rng := rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x9e3779b97f4a7c15))
	res := &SimResult{}
	var succs []Transition
	for t := 0; t < opt.Traces; t++ {
		if stopped(opt.Stop) {
			res.Canceled = true
			break
		}
		res.Traces++
		trace := []TraceStep{{State: Init(cfg)}}
		for {
			st := trace[len(trace)-1].State
			res.States++
			for i, f := range invs {
				if !f(cfg, st) {
					res.Violation = &Violation{Kind: "invariant", Property: cfg.Invariants[i], Trace: trace}
					res.Duration = time.Since(start)
					return res, nil
				}
			}
			if len(cfg.Properties) > 0 && !fairEnabled(cfg, st) {
				if prop, s := liveSnapshot(cfg, st); s >= 0 {
					res.Violation = &Violation{Kind: "property", Property: prop, Trace: trace, Stutter: true,
						Detail: liveDetail(cfg, s)}
					res.Duration = time.Since(start)
					return res, nil
				}
			}
			if len(trace) >= opt.Depth {
				break
			}
			succs = succs[:0]
			forEachSuccessor(cfg, st, func(a Action, n *State) {
				succs = append(succs, Transition{Action: a, State: n})
			})
			res.Generated += int64(len(succs))
			if len(succs) == 0 {
				if cfg.CheckDeadlock {
					res.Violation = &Violation{Kind: "deadlock", Trace: trace}
					res.Duration = time.Since(start)
					return res, nil
				}
				break
			}
			pick := succs[rng.IntN(len(succs))]
			a := pick.Action
			trace = append(trace, TraceStep{Label: a.Label(cfg), Action: &a, State: pick.State})
		}
		res.MaxLen = max(res.MaxLen, len(trace))
	}
	res.Duration = time.Since(start)
	return res, nil
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
