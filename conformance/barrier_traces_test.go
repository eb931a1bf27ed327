package conformance

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/spec"
)

// The barrier traces of traces/: runs of the dataflow core (conforming)
// and runs of the negative variants of tla/BarrierSnapshots.tla
// (rejected), each a fixed script of steps. go test ./conformance -run
// TestBarrierTracesUpToDate -update rewrites them; TestTraces audits
// them with the verdict their path names.

// bstep is one scripted step: emit or inject at a node, take the head of
// an edge (a record or a barrier, as it is), restore the cluster, or
// drain (take every enabled Emit, Process and RecvBarrier, in order,
// until none is).
type bstep struct {
	do       string // emit, inject, timeout, take, restore, drain
	from, to string // the node (emit, inject), the edge (take)
}

func emit(n string) bstep      { return bstep{do: "emit", from: n} }
func timeout(n string) bstep   { return bstep{do: "timeout", from: n} }
func inject(n string) bstep    { return bstep{do: "inject", from: n} }
func take(a, b string) bstep   { return bstep{do: "take", from: a, to: b} }
func steps(s ...bstep) []bstep { return s }

var (
	restoreStep = bstep{do: "restore"}
	drainStep   = bstep{do: "drain"}
)

// barrierScenario is a barrier trace to generate: its graph, its script,
// and the specification that runs it: the core (Variant "") or a
// negative variant of the model.
type barrierScenario struct {
	name    string // the file under traces/
	graph   dataflow.Graph
	variant barrier.Variant
	script  []bstep
	note    string
}

// fanIn is two sources feeding an operator X feeding the sink K.
func fanIn(mode dataflow.Mode) dataflow.Graph {
	return dataflow.Graph{Cap: 2, Mode: mode,
		Nodes: []dataflow.NodeSpec{{Name: "S1", Budget: 2}, {Name: "S2", Budget: 2}, {Name: "X", Kind: dataflow.Operator}, {Name: "K", Kind: dataflow.Sink}},
		Edges: []dataflow.EdgeSpec{{From: 0, To: 2}, {From: 1, To: 2}, {From: 2, To: 3}}}
}

// forcedFanIn is fanIn in the adaptive mode with X -> K force-aligned.
func forcedFanIn() dataflow.Graph {
	g := fanIn(dataflow.Adaptive)
	g.Edges[2].ForceAligned = true
	return g
}

// loop is S feeding X1, X1 feeding X2, X2 feeding the sink K and, once
// round the cycle, X1 again (the back-edge X2->X1).
func loop(mode dataflow.Mode) dataflow.Graph {
	return dataflow.Graph{Cap: 2, Iter: 1, Mode: mode,
		Nodes: []dataflow.NodeSpec{{Name: "S", Budget: 2}, {Name: "X1", Kind: dataflow.Operator}, {Name: "X2", Kind: dataflow.Operator}, {Name: "K", Kind: dataflow.Sink}},
		Edges: []dataflow.EdgeSpec{{From: 0, To: 1}, {From: 1, To: 2}, {From: 2, To: 3}, {From: 2, To: 1, Back: true}}}
}

// The scripts.
var (
	// S1's barrier blocks X's input from S1 until S2's arrives; S1's
	// second record waits behind it.
	alignedFanIn = steps(emit("S1"), emit("S2"), take("S1", "X"), inject("S1"), take("S1", "X"), emit("S1"),
		take("S2", "X"), inject("S2"), take("S2", "X"), drainStep)
	// X records on S1's barrier, which overtook S1's second record; X's
	// barrier overtakes its two queued outputs; K records on it; S2's
	// record taken after X recorded is logged.
	unalignedFanIn = steps(emit("S1"), emit("S1"), emit("S2"), take("S1", "X"), take("S2", "X"), inject("S1"),
		take("S1", "X"), take("X", "K"), take("X", "K"), emit("S2"), take("S2", "X"), inject("S2"), take("S2", "X"))
	// X1 records on S's barrier (aligned on its forward input only); the
	// record coming round the back-edge after that is logged.
	alignedLoop = steps(emit("S"), take("S", "X1"), take("X1", "X2"), inject("S"), take("S", "X1"),
		take("X2", "X1"), take("X1", "X2"), drainStep)
	// Adaptive: X queues a record for K; S1's barrier blocks X, whose
	// alignment times out: X records, its barrier overtakes the queued
	// record (persisted), S2's record before S2's barrier is logged.
	adaptiveFanIn = steps(emit("S1"), take("S1", "X"), inject("S1"), take("S1", "X"), emit("S1"), emit("S2"),
		timeout("X"), take("X", "K"), take("X", "K"), take("S1", "X"), take("S2", "X"), inject("S2"), take("S2", "X"))
	// Adaptive, aligned in time: X records on S2's barrier, then its
	// timer goes off (late).
	adaptiveLate = steps(emit("S1"), take("S1", "X"), inject("S1"), take("S1", "X"), emit("S2"), take("S2", "X"),
		inject("S2"), take("S2", "X"), take("X", "K"), take("X", "K"), take("X", "K"), emit("S1"), take("S1", "X"), timeout("X"), drainStep)
	// Alignment without blocking: X takes S1's second record, sent after
	// S1's barrier, before it records.
	noBlockFanIn = steps(emit("S1"), take("S1", "X"), inject("S1"), take("S1", "X"), emit("S1"), take("S1", "X"), take("X", "K"), emit("S2"),
		take("S2", "X"), inject("S2"), take("S2", "X"), drainStep, restoreStep, drainStep)
)

func barrierScenarios() []barrierScenario {
	return []barrierScenario{
		{name: "barrier/conforms/aligned-dag.jsonl", graph: fanIn(dataflow.Aligned), script: alignedFanIn,
			note: "Aligned barriers (ABS) on a fan-in DAG: S1's barrier blocks X's input from S1 (S1's second record waits behind it) until S2's arrives; X records then, and no channel state is recorded at all."},
		{name: "barrier/conforms/unaligned-dag.jsonl", graph: fanIn(dataflow.Unaligned), script: append(unalignedFanIn, drainStep),
			note: "Unaligned checkpoints on the same DAG: S1's barrier overtakes S1's queued record, X records on its first barrier and its barrier overtakes X's two queued outputs (persisted), and S2's record taken after X recorded is logged."},
		{name: "barrier/conforms/aligned-cycle.jsonl", graph: loop(dataflow.Aligned), script: alignedLoop,
			note: "Aligned barriers on a cycle: X1 records when its forward input's barrier arrives; the record coming round the back-edge X2->X1 before X2's barrier is logged, the only channel state."},
		{name: "barrier/conforms/unaligned-restore.jsonl", graph: fanIn(dataflow.Unaligned), script: slicesConcat(unalignedFanIn, steps(restoreStep, drainStep)),
			note: "The unaligned run restored once its snapshot is complete (K records on X's barrier), with records still queued: every node restarts from its part, each edge holds its recorded records, and running on delivers every record to the sink exactly once."},
		{name: "barrier/conforms/adaptive-dag.jsonl", graph: fanIn(dataflow.Adaptive), script: slicesConcat(adaptiveFanIn, steps(drainStep, restoreStep, drainStep)),
			note: "Adaptive barriers (tla/BarrierAdaptive.tla) on the fan-in DAG: S1's barrier blocks X, whose alignment times out; X switches to unaligned: it records at once, its barrier overtakes the record it had queued for K (persisted), S1's input is done (its blocked record is the next snapshot's), and S2's record taken before S2's barrier is logged. X reports unaligned; the run is restored and drains exactly once."},
		{name: "barrier/rejects/BarrierExactChannelState-adaptive-no-persist.jsonl", graph: fanIn(dataflow.Adaptive), variant: barrier.VariantAdaptiveNoPersist, script: slicesConcat(adaptiveFanIn, steps(drainStep, restoreStep, drainStep)),
			note: "Written by the model's SpecAdaptiveNoPersist: X's switch persists nothing, neither the record its barrier overtakes nor S2's record it takes before S2's barrier; the restore loses them (also BarrierExactlyOnce)."},
		{name: "barrier/rejects/ForceAlignedNoChannelState-adaptive-force-switch.jsonl", graph: forcedFanIn(), variant: barrier.VariantAdaptiveForceSwitch, script: slicesConcat(adaptiveFanIn, steps(drainStep)),
			note: "Written by the model's SpecAdaptiveForceSwitch: X -> K is force-aligned, yet X switches (FLINK-33693) and its barrier overtakes and persists the record queued on X -> K. SpecAdaptive refuses the Timeout (Out(n) \\cap ForceAligned = {})."},
		{name: "barrier/rejects/ReportedTypeTaken-adaptive-stale-type.jsonl", graph: fanIn(dataflow.Adaptive), variant: barrier.VariantAdaptiveStaleType, script: slicesConcat(adaptiveFanIn, steps(drainStep)),
			note: "Written by the model's SpecAdaptiveStaleType: X switches but reports the type decided before the switch, aligned (FLINK-31588)."},
		{name: "barrier/rejects/ReportedTypeTaken-adaptive-late-timeout.jsonl", graph: fanIn(dataflow.Adaptive), variant: barrier.VariantAdaptiveLateTimeout, script: adaptiveLate,
			note: "Written by the model's SpecAdaptiveLateTimeout: X recorded aligned, then its timer goes off and it switches anyway, reporting unaligned for the aligned snapshot it took. SpecAdaptive refuses the Timeout (n \\notin recorded)."},
		{name: "barrier/rejects/BarrierConsistentCut-no-blocking.jsonl", graph: fanIn(dataflow.Aligned), variant: barrier.VariantNoBlock, script: noBlockFanIn,
			note: "Written by the model's SpecNoBlock: alignment without blocking. X takes S1's second record, sent after S1's barrier, before recording (an orphan); after the restore S1 emits it again and the sink receives it twice (also BarrierExactlyOnce). The Spec refuses the Process."},
		{name: "barrier/rejects/BarrierExactChannelState-no-back-edge-log.jsonl", graph: loop(dataflow.Aligned), variant: barrier.VariantNoLog, script: append(slicesConcat(alignedLoop), restoreStep, drainStep),
			note: "Written by the model's SpecNoLog: the record taken off the back-edge after X1 recorded is not logged, so the back-edge's channel state misses it and the restore loses it (also BarrierExactlyOnce)."},
		{name: "barrier/rejects/BarrierExactChannelState-overtaken-not-persisted.jsonl", graph: fanIn(dataflow.Unaligned), variant: barrier.VariantNoPersist, script: slicesConcat(unalignedFanIn, steps(drainStep, restoreStep, drainStep)),
			note: "Written by the model's SpecNoPersist: the records the unaligned barriers overtake are not persisted, so the channel state misses them and the restore loses them (also BarrierExactlyOnce)."},
	}
}

func slicesConcat(ss ...[]bstep) []bstep {
	var out []bstep
	for _, s := range ss {
		out = append(out, s...)
	}
	return out
}

// generate runs sc and returns its trace.
func (sc barrierScenario) generate() ([]byte, error) {
	g, err := dataflow.NewGraph(sc.graph)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	src := "the dataflow core (impl/dataflow), conformance/barrier_traces_test.go"
	if sc.variant != "" {
		src = "model/barrier's " + string(sc.variant) + ", conformance/barrier_traces_test.go"
	}
	tr, err := dataflow.NewTracer(&b, g, spec.BarrierHeader{Drained: true, Source: src, Note: sc.note})
	if err != nil {
		return nil, err
	}
	if sc.variant == "" {
		err = runCoreScript(g, tr, sc.script)
	} else {
		err = runModelScript(g, sc.variant, tr, sc.script)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sc.name, err)
	}
	err = tr.Flush()
	return b.Bytes(), err
}

// runCoreScript runs script on a cluster of g's cores traced by tr.
func runCoreScript(g *dataflow.Graph, tr *dataflow.Tracer, script []bstep) error {
	c := dataflow.NewCluster(g, nil)
	tr.Attach(c)
	for i, s := range script {
		var err error
		switch s.do {
		case "emit":
			_, err = c.Nodes[g.NodeIndex(s.from)].Emit()
		case "inject":
			_, err = c.Nodes[g.NodeIndex(s.from)].Inject()
		case "timeout":
			_, err = c.Nodes[g.NodeIndex(s.from)].Timeout()
		case "take":
			_, err = c.TakeAny(g.EdgeIndex(s.from, s.to))
		case "restore":
			var snap *dataflow.Snapshot
			if snap, err = c.Snapshot(); err == nil {
				if c, err = dataflow.RestoreCluster(g, snap, nil); err == nil {
					tr.Restore(c)
				}
			}
		case "drain":
			c.Drain()
		}
		if err != nil {
			return fmt.Errorf("step %d (%s %s %s): %w", i+1, s.do, s.from, s.to, err)
		}
	}
	return nil
}

// runModelScript runs script on the model of g for variant, writing each
// step as the trace event it is (barrierEvent) to tr.
func runModelScript(g *dataflow.Graph, variant barrier.Variant, tr *dataflow.Tracer, script []bstep) error {
	cfg, err := barrierConfig(g.Trace(), variant)
	if err != nil {
		return err
	}
	st := barrier.Init(cfg)
	apply := func(a barrier.Action) error {
		ns, err := a.Apply(cfg, st)
		if err == nil {
			tr.Write(barrierEvent(cfg, st, a, ns))
			st = ns
		}
		return err
	}
	for i, s := range script {
		var err error
		switch s.do {
		case "emit", "inject", "timeout":
			n, _ := cfg.NodeIndex(s.from)
			kind := map[string]barrier.ActionKind{"emit": barrier.ActEmit, "inject": barrier.ActInject, "timeout": barrier.ActTimeout}[s.do]
			err = apply(barrier.Action{Kind: kind, Node: n})
		case "take":
			e, _ := cfg.EdgeIndex(s.from, s.to)
			if len(st.Q[e]) > 0 && st.Q[e][0].Barrier {
				err = apply(barrier.Action{Kind: barrier.ActRecvBarrier, Edge: e})
			} else {
				err = apply(barrier.Action{Kind: barrier.ActProcess, Edge: e})
			}
		case "restore":
			err = apply(barrier.Action{Kind: barrier.ActRestore})
		case "drain":
			for moved := true; moved; {
				moved = false
				for _, a := range cfg.Actions() {
					if a.Kind != barrier.ActInject && a.Kind != barrier.ActRestore && a.Kind != barrier.ActTimeout && apply(a) == nil {
						moved = true
					}
				}
			}
		}
		if err != nil {
			return fmt.Errorf("step %d (%s %s %s): %w", i+1, s.do, s.from, s.to, err)
		}
	}
	return nil
}

// TestBarrierTracesUpToDate checks that traces/ holds the barrier traces
// the scenarios generate (run with -update to rewrite them).
func TestBarrierTracesUpToDate(t *testing.T) {
	for _, sc := range barrierScenarios() {
		b, err := sc.generate()
		require.NoError(t, err)
		p := filepath.Join(tracesDir, sc.name)
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}
		got, err := os.ReadFile(p)
		require.NoError(t, err, "run go test ./conformance -run TestBarrierTracesUpToDate -update")
		assert.Equal(t, string(b), string(got), "%s is stale: run go test ./conformance -run TestBarrierTracesUpToDate -update", sc.name)
		require.True(t, strings.HasPrefix(sc.name, "barrier/conforms/") == (sc.variant == ""), "%s: the core's runs conform, the negative variants' are rejected", sc.name)
	}
}
