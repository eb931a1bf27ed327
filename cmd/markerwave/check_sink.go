package main

import (
	"fmt"

	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/model/engine"
	"github.com/markerwave/markerwave/spec"
)

// runSink checks a model of tla/BarrierSink.tla (the two-phase-commit
// sink): model/barrier's sink search on the shared engine, reported as
// runBarrier reports a barrier model.
func (f *checkFlags) runSink() int {
	if *f.simulate {
		return f.usageError("--simulate: %s is a model of %s.tla, which check searches exhaustively only", *f.model, barrier.SinkModule)
	}
	cfg, err := barrier.LoadSink(*f.model)
	if err != nil {
		return f.fail(exitUsage, err)
	}
	checks := append(append([]spec.Property{}, cfg.Invariants...), cfg.Properties...)
	f.sinkHeader(cfg, checks)
	f.searchHeader(false)
	stop, release := interruptible()
	defer release()
	opt := engine.Options{Workers: *f.workers, MaxStates: *f.maxStates, MaxMemory: int64(f.maxMemory), Stop: stop, Progress: f.searchProgress()}
	r, err := barrier.SinkExplore(cfg, opt)
	if err != nil {
		return f.fail(exitUsage, err)
	}
	f.searchStopped(r.Violation != nil, r.Counts)
	if *f.json {
		f.writeJSON(sinkVerdict(cfg, *f.model, checks, r))
	} else {
		f.reportSink(cfg, r)
	}
	return searchCode(r.Violation != nil, r.Stop)
}

// sinkHeader prints what is checked (not with --json).
func (f *checkFlags) sinkHeader(cfg *barrier.SinkConfig, checks []spec.Property) {
	if *f.json {
		return
	}
	fmt.Fprintf(f.stdout, "Model %s (%s): %s, %s, %s, at most %s, %s and %s.\n",
		cfg.Base.Name, *f.model, cfg.Variant, plural(len(cfg.Base.Nodes), "node"), plural(len(cfg.Base.Edges), "edge"),
		plural(cfg.MaxCkpt, "checkpoint"), plural(cfg.MaxRestores, "restore"), plural(cfg.MaxAborts, "store abort"))
	if len(checks) > 0 {
		fmt.Fprintf(f.stdout, "Checking %s.\n", spec.JoinProperties(checks))
	}
}

// reportSink prints the counterexample, if any, and TLC's summary.
func (f *checkFlags) reportSink(cfg *barrier.SinkConfig, r *barrier.SinkResult) {
	if v := r.Violation; v != nil {
		violationHeader(f.stdout, v.Kind, v.Property, "")
		barrier.WriteSinkTrace(f.stdout, cfg, v)
	}
	f.reportSearch(r.Violation != nil, r.Counts)
}

// sinkVerdict is check's --json output for a sink model.
func sinkVerdict(cfg *barrier.SinkConfig, file string, checks []spec.Property, r *barrier.SinkResult) checkVerdict {
	out := checkVerdict{Model: cfg.Base.Name, File: file, Specification: string(cfg.Variant), Checked: checks,
		Mode: "exhaustive", Verdict: "ok", Stop: r.Stop.String(), Seconds: r.Duration.Seconds(),
		Counts: exploreCounts{Generated: r.Generated, Distinct: r.Distinct, Depth: r.Depth, Left: r.Left}}
	if v := r.Violation; v != nil {
		out.Verdict, out.Property, out.Kind = "violated", v.Property, v.Kind
		labels, vars := make([]string, len(v.Trace)), make([][]barrier.Var, len(v.Trace))
		for i, s := range v.Trace {
			labels[i], vars[i] = s.Label, barrier.SinkVars(cfg, s.State)
		}
		out.Counterexample = varSteps(labels, vars)
	} else if r.Stop != engine.StopDone {
		out.Verdict = "incomplete"
	}
	return out
}
