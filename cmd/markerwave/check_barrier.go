package main

import (
	"fmt"

	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/model/engine"
	"github.com/markerwave/markerwave/model/tlcmodel"
	"github.com/markerwave/markerwave/spec"
)

// isBarrierModel reports whether the TLC model file is a model of
// tla/BarrierSnapshots.tla, which model/barrier checks. A file that cannot
// be read is left to model.Load, which names what is wrong.
func isBarrierModel(cfgPath string) bool {
	mod, err := tlcmodel.SpecModule(cfgPath)
	return err == nil && barrier.IsSpecModule(mod)
}

// isSinkModel reports whether the TLC model file is a model of
// tla/BarrierSink.tla (check_sink.go).
func isSinkModel(cfgPath string) bool {
	mod, err := tlcmodel.SpecModule(cfgPath)
	return err == nil && barrier.IsSinkModule(mod)
}

// runBarrier checks a model of tla/BarrierSnapshots.tla: the exhaustive
// search of model/barrier on the shared engine, reported as check reports
// a Chandy-Lamport model.
func (f *checkFlags) runBarrier() int {
	if *f.simulate {
		return f.usageError("--simulate: %s is a model of %s.tla, which check searches exhaustively only", *f.model, barrier.SpecModule)
	}
	cfg, err := barrier.Load(*f.model)
	if err != nil {
		return f.fail(exitUsage, err)
	}
	checks := append(append([]spec.Property{}, cfg.Invariants...), cfg.Properties...)
	f.barrierHeader(cfg, checks)
	f.searchHeader(false) // model/barrier stores the states
	stop, release := interruptible()
	defer release()
	opt := engine.Options{Workers: *f.workers, MaxStates: *f.maxStates, MaxMemory: int64(f.maxMemory), Stop: stop, Progress: f.searchProgress()}
	r, err := barrier.Explore(cfg, opt)
	if err != nil {
		return f.fail(exitUsage, err)
	}
	f.searchStopped(r.Violation != nil, r.Counts)
	if *f.json {
		f.writeJSON(barrierVerdict(cfg, *f.model, checks, r))
	} else {
		f.reportBarrier(cfg, r)
	}
	return searchCode(r.Violation != nil, r.Stop)
}

// barrierHeader prints what is checked (not with --json).
func (f *checkFlags) barrierHeader(cfg *barrier.Config, checks []spec.Property) {
	if *f.json {
		return
	}
	fmt.Fprintf(f.stdout, "Model %s (%s): %s, %s, %s, %s.\n", cfg.Name, *f.model, cfg.Variant, cfg.Mode,
		plural(len(cfg.Nodes), "node"), plural(len(cfg.Edges), "edge"))
	if len(checks) > 0 {
		fmt.Fprintf(f.stdout, "Checking %s.\n", spec.JoinProperties(checks))
	}
	if len(cfg.Unchecked) > 0 {
		fmt.Fprintf(f.stdout, "Not checking %s: only TLC evaluates it.\n", spec.JoinProperties(cfg.Unchecked))
	}
}

// reportBarrier prints the counterexample, if any, and TLC's summary.
func (f *checkFlags) reportBarrier(cfg *barrier.Config, r *barrier.Result) {
	if v := r.Violation; v != nil {
		violationHeader(f.stdout, v.Kind, v.Property, "")
		barrier.WriteTrace(f.stdout, cfg, v)
	}
	f.reportSearch(r.Violation != nil, r.Counts)
}

// barrierVerdict is check's --json output for a barrier model: the same
// fields as for a Chandy-Lamport model, each counterexample step with
// every variable it changed.
func barrierVerdict(cfg *barrier.Config, file string, checks []spec.Property, r *barrier.Result) checkVerdict {
	out := checkVerdict{Model: cfg.Name, File: file, Specification: string(cfg.Variant), Checked: checks,
		Mode: "exhaustive", Verdict: "ok", Stop: r.Stop.String(), Seconds: r.Duration.Seconds(),
		Counts: exploreCounts{Generated: r.Generated, Distinct: r.Distinct, Depth: r.Depth, Left: r.Left}}
	if v := r.Violation; v != nil {
		out.Verdict, out.Property, out.Kind = "violated", v.Property, v.Kind
		out.Counterexample = barrierSteps(cfg, v.Trace)
	} else if r.Stop != engine.StopDone {
		out.Verdict = "incomplete"
	}
	return out
}

// barrierSteps are a barrier counterexample's states as check's --json
// steps: each with the variables it changed (all of them in the first).
func barrierSteps(cfg *barrier.Config, trace []barrier.TraceStep) []checkStep {
	labels, vars := make([]string, len(trace)), make([][]barrier.Var, len(trace))
	for i, s := range trace {
		labels[i], vars[i] = s.Label, barrier.Vars(cfg, s.State)
	}
	return varSteps(labels, vars)
}

// varSteps are a counterexample's states, each labelled by its action, as
// check's --json steps: each with the variables it changed.
func varSteps(labels []string, vars [][]barrier.Var) []checkStep {
	var steps []checkStep
	var prev []barrier.Var
	for i, vs := range vars {
		st := checkStep{Action: labels[i], Changed: map[string]string{}}
		for j, x := range vs {
			if prev == nil || prev[j].Value != x.Value {
				st.Changed[x.Name] = x.Value
			}
		}
		prev = vs
		steps = append(steps, st)
	}
	return steps
}
